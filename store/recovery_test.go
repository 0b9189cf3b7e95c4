package store_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/store"
	"github.com/runbot/runbot/store/storetest"
)

// These are the conformance suite's recovery scenarios (storetest, Recovery)
// with real processes that really die: child processes of this test binary
// that exit with rows claimed, so that the SQLite store's own liveness check
// (a host-local pid and its start time, owner.go) is what tells them dead.

// A process dies mid-remediation. The next process to start marks what it
// left: the run interrupted, the plan interrupted (and never applicable
// again), the work back in the queue. What belongs to live processes,
// including this one, is left alone.
func TestMarkInterruptedAfterCrash(t *testing.T) {
	path := dbPath(t)
	s := openAt(t, path)
	ctx := testCtx(t)
	mine := mkRun(t, s)
	minePlan := move(t, s, approve(t, s, mkPlan(t, s, func(p *store.Plan) { p.Deployment = "dsv5" })), store.PlanApplying)

	crashed := startChild(t, "crash", path, "a")
	var left struct{ Run, Plan, Work string }
	require.NoError(t, json.Unmarshal([]byte(crashed.next()), &left))
	crashed.wait()

	rec, err := s.MarkInterrupted(ctx)
	require.NoError(t, err)
	require.Equal(t, store.Recovery{Runs: []string{left.Run}, Plans: []string{left.Plan}, Requeued: []string{left.Work}}, rec)

	run, err := s.GetRun(ctx, left.Run)
	require.NoError(t, err)
	require.Equal(t, store.RunInterrupted, run.Status)
	require.False(t, run.FinishedAt.IsZero())

	plan, err := s.GetPlan(ctx, left.Plan)
	require.NoError(t, err)
	require.Equal(t, store.PlanInterrupted, plan.State)
	require.True(t, plan.State.Final())
	_, err = s.TransitionPlan(ctx, store.Transition{PlanID: plan.ID, From: store.PlanInterrupted, To: store.PlanApplying})
	var invalid *store.InvalidTransitionError
	require.ErrorAs(t, err, &invalid, "an interrupted plan is never applied again")
	_, err = s.RecordApproval(ctx, store.Approval{PlanID: plan.ID, User: "U-carol", Decision: store.Approve, PlanHash: plan.Hash})
	var refused *store.ApprovalError
	require.ErrorAs(t, err, &refused, "nor approved again")

	actions, err := s.Actions(ctx, plan.ID)
	require.NoError(t, err)
	require.Len(t, actions, 1)
	require.Equal(t, store.ActionStarted, actions[0].State, "the record says the restart may have happened")

	w, err := s.GetWork(ctx, left.Work)
	require.NoError(t, err)
	require.Equal(t, store.WorkPending, w.State)
	require.Equal(t, left.Run, w.RunID, "the requeued work remembers its interrupted run")

	r, err := s.GetRun(ctx, mine.ID)
	require.NoError(t, err)
	require.Equal(t, store.RunRunning, r.Status, "this process's run is alive")
	p, err := s.GetPlan(ctx, minePlan.ID)
	require.NoError(t, err)
	require.Equal(t, store.PlanApplying, p.State, "this process's plan is alive")

	require.Equal(t, []string{store.AuditRunInterrupted}, auditKinds(t, s, store.AuditFilter{RunID: left.Run, Kind: store.AuditRunInterrupted}))
	require.Contains(t, auditKinds(t, s, store.AuditFilter{PlanID: left.Plan}), "plan.state:interrupted")

	again, err := s.MarkInterrupted(ctx)
	require.NoError(t, err)
	require.True(t, again.Empty(), "recovery is idempotent")
}

// The conformance suite's recovery cases, with a real process that dies
// at each stage (a child killed by itself, as a crash leaves it), not the
// suite's stand-in for a dead owner.
func TestRecoveryNeverReRunsARunWhoseReportWasStored(t *testing.T) {
	t.Parallel()
	for _, tc := range storetest.RecoveryCases() {
		t.Run(tc.Name(), func(t *testing.T) {
			t.Parallel()
			path := dbPath(t)
			s := openAt(t, path)
			ctx := testCtx(t)
			w, _, err := s.Enqueue(ctx, store.Work{Trigger: store.TriggerAlert, Runbook: "sglang-pd-wedge"})
			require.NoError(t, err)
			for range tc.Earlier {
				c := startChild(t, "die", path, "running")
				c.next()
				c.wait()
				_, err := s.MarkInterrupted(ctx)
				require.NoError(t, err)
			}

			c := startChild(t, "die", path, tc.Stage)
			var left struct{ Run, Work string }
			require.NoError(t, json.Unmarshal([]byte(c.next()), &left))
			c.wait()
			storetest.CheckRecovery(t, s, tc, w.ID, left.Run, left.Work)
		})
	}
}

// Work whose claimer died MaxWorkAttempts times is abandoned rather than fed to
// a fourth process.
func TestMarkInterruptedAbandonsWorkThatKeepsCrashing(t *testing.T) {
	path := dbPath(t)
	s := openAt(t, path)
	ctx := testCtx(t)
	w, _, err := s.Enqueue(ctx, store.Work{Trigger: store.TriggerAlert, Runbook: "poison"})
	require.NoError(t, err)
	for attempt := 1; attempt <= 3; attempt++ {
		c := startChild(t, "claim", path, "")
		require.Equal(t, w.ID, c.next())
		c.wait()
		rec, err := s.MarkInterrupted(ctx)
		require.NoError(t, err)
		if attempt < 3 {
			require.Equal(t, []string{w.ID}, rec.Requeued, "attempt %d", attempt)
		} else {
			require.Equal(t, []string{w.ID}, rec.Abandoned)
		}
	}
	got, err := s.GetWork(ctx, w.ID)
	require.NoError(t, err)
	require.Equal(t, store.WorkDone, got.State)
	require.Equal(t, 3, got.Attempts)
	_, err = s.ClaimWork(ctx)
	require.ErrorIs(t, err, store.ErrNoWork)
}
