package storetest

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/store"
)

var recoveryTests = []test{
	{"InterruptsWhatADeadProcessLeft", testMarkInterruptedAfterCrash},
	{"LeavesLiveProcessesAlone", testMarkInterruptedLeavesLiveProcessesAlone},
	{"NeverReRunsARunWhoseReportWasStored", testRecoveryNeverReRunsARunWhoseReportWasStored},
	{"AbandonsWorkThatKeepsCrashing", testMarkInterruptedAbandonsWorkThatKeepsCrashing},
}

// crashed is what a process left behind when it died mid-remediation.
type crashed struct{ Run, Plan, Work string }

// crashMidRemediation has the process owner start a run for queued work
// and apply a plan of it up to its first action, then die there, as a
// process that is killed mid-remediation does.
func crashMidRemediation(t *testing.T, e *Env, owner, arg string) crashed {
	t.Helper()
	c := midRemediation(t, e.OpenAs(t, owner), arg)
	e.Kill(owner)
	return c
}

// midRemediation has the process of s start a run for queued work and
// apply a plan of it up to its first action, and stop there.
func midRemediation(t *testing.T, s store.Store, arg string) crashed {
	t.Helper()
	ctx := t.Context()
	_, _, err := s.Enqueue(ctx, store.Work{Trigger: store.TriggerAlert, Runbook: "sglang-pd-wedge", Key: "crash-" + arg})
	require.NoError(t, err)
	w, err := s.ClaimWork(ctx)
	require.NoError(t, err)
	run, err := s.CreateRun(ctx, store.Run{Runbook: "sglang-pd-wedge", Trigger: store.TriggerAlert, WorkID: w.ID})
	require.NoError(t, err)
	p, _, err := s.CreatePlan(ctx, store.Plan{RunID: run.ID, Remediation: "restart-" + arg, Deployment: "dsv4",
		Hash: "h1", Body: json.RawMessage(`{}`), RequestedBy: "alertmanager"})
	require.NoError(t, err)
	_, err = s.RecordApproval(ctx, store.Approval{PlanID: p.ID, User: "U-bob", Decision: store.Approve, PlanHash: "h1"})
	require.NoError(t, err)
	_, err = s.TransitionPlan(ctx, store.Transition{PlanID: p.ID, From: store.PlanApproved, To: store.PlanApplying})
	require.NoError(t, err)
	_, err = s.StartAction(ctx, store.ActionRecord{PlanID: p.ID, Index: 0, Target: "decode@gpu-1", Action: "systemd_restart"})
	require.NoError(t, err)
	return crashed{Run: run.ID, Plan: p.ID, Work: w.ID}
}

// A process dies mid-remediation. The next process to start marks what it
// left: the run interrupted, the plan interrupted (and never applicable
// again), the work back in the queue. What belongs to live processes,
// including this one, is left alone.
func testMarkInterruptedAfterCrash(t *testing.T, e *Env) {
	s, ctx := e.S, t.Context()
	mine := CreateRun(t, s)
	minePlan := Move(t, s, Approve(t, s, ProposePlan(t, s, func(p *store.Plan) { p.Deployment = "dsv5" })), store.PlanApplying)

	left := crashMidRemediation(t, e, "storetest/crashed", "a")

	rec, err := s.MarkInterrupted(ctx)
	require.NoError(t, err)
	require.Equal(t, store.Recovery{Runs: []string{left.Run}, Plans: []string{left.Plan}, Requeued: []string{left.Work}}, rec)
	require.False(t, rec.Empty())

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
	_, err = s.StartAction(ctx, store.ActionRecord{PlanID: plan.ID, Index: 1, Target: "decode@gpu-1", Action: "systemd_restart"})
	var conflict *store.StateConflictError
	require.ErrorAs(t, err, &conflict, "nor does any action of it start")

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

	require.Equal(t, []string{store.AuditRunInterrupted}, AuditKinds(t, s, store.AuditFilter{RunID: left.Run, Kind: store.AuditRunInterrupted}))
	require.Contains(t, AuditKinds(t, s, store.AuditFilter{PlanID: left.Plan}), "plan.state:interrupted")

	again, err := s.MarkInterrupted(ctx)
	require.NoError(t, err)
	require.True(t, again.Empty(), "recovery is idempotent")
}

// A process that still runs (a `runbot run` beside a restarting server, a
// replica) keeps its runs, plans and work, whoever recovers.
func testMarkInterruptedLeavesLiveProcessesAlone(t *testing.T, e *Env) {
	ctx := t.Context()
	live := e.OpenAs(t, "storetest/live")
	_, _, err := live.Enqueue(ctx, store.Work{Trigger: store.TriggerAlert, Runbook: "sglang-pd-wedge"})
	require.NoError(t, err)
	w, err := live.ClaimWork(ctx)
	require.NoError(t, err)
	run, err := live.CreateRun(ctx, store.Run{Runbook: w.Runbook, Trigger: w.Trigger, WorkID: w.ID})
	require.NoError(t, err)
	plan := Move(t, live, Approve(t, live, ProposePlan(t, live)), store.PlanApplying)
	plan = Move(t, live, plan, store.PlanVerifying)

	for _, s := range []store.Store{e.S, e.OpenAs(t, "storetest/restarted")} {
		rec, err := s.MarkInterrupted(ctx)
		require.NoError(t, err)
		require.True(t, rec.Empty(), "%+v", rec)
	}
	gotRun, err := e.S.GetRun(ctx, run.ID)
	require.NoError(t, err)
	require.Equal(t, store.RunRunning, gotRun.Status)
	require.Equal(t, "storetest/live", gotRun.Owner)
	gotPlan, err := e.S.GetPlan(ctx, plan.ID)
	require.NoError(t, err)
	require.Equal(t, store.PlanVerifying, gotPlan.State)
	gotWork, err := e.S.GetWork(ctx, w.ID)
	require.NoError(t, err)
	require.Equal(t, store.WorkStarted, gotWork.State)

	// Once it dies, the same rows are recovered.
	e.Kill("storetest/live")
	rec, err := e.S.MarkInterrupted(ctx)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{run.ID, plan.RunID}, rec.Runs)
	require.Equal(t, []string{plan.ID}, rec.Plans)
	require.Equal(t, []string{w.ID}, rec.Requeued)
}

// dieAt has a new process named owner claim the oldest pending work and
// carry it out as the bot's worker does, up to stage, then die there:
// "claimed" (no run yet), "running" (run created), "progress" (a live
// report stored), "reported" (the final report stored, the run not
// finished), "finished" (the run finished, the work not yet done).
func dieAt(t *testing.T, e *Env, owner, stage string) (run, work string) {
	t.Helper()
	s, ctx := e.OpenAs(t, owner), t.Context()
	defer e.Kill(owner)
	w, err := s.ClaimWork(ctx)
	require.NoError(t, err)
	if stage == "claimed" {
		return "", w.ID
	}
	r, err := s.CreateRun(ctx, store.Run{Runbook: w.Runbook, Trigger: w.Trigger, WorkID: w.ID})
	require.NoError(t, err)
	switch stage {
	case "running":
	case "progress":
		err = s.SetRunReport(ctx, r.ID, json.RawMessage(`{"run_id":"`+r.ID+`","steps":[{"id":"chat"}]}`))
	case "reported":
		err = s.SetRunReport(ctx, r.ID, FinalReport(r.ID))
	case "finished":
		_, err = s.FinishRun(ctx, r.ID, store.RunFinished, store.OutcomeCritical, FinalReport(r.ID))
	default:
		err = fmt.Errorf("unknown stage %q", stage)
	}
	require.NoError(t, err)
	return r.ID, w.ID
}

// RecoveryCase is one moment at which a process may die while carrying out
// queued work, and what recovery must make of it. Backends that can kill a
// real process (store's SQLite tests) walk the same cases as the suite.
type RecoveryCase struct {
	// Stage is where the process dies: claimed (no run yet), running,
	// progress (a live report stored), reported (the final report stored,
	// the run still running) or finished.
	Stage string
	// Earlier is how many times the work was claimed and cut short before
	// this attempt.
	Earlier    int
	RunStatus  store.RunStatus
	Outcome    store.Outcome
	WorkState  store.WorkState
	Recovery   func(run, work string) store.Recovery
	HasNoRun   bool
	FinishedAt time.Time
}

// Name names the case for t.Run.
func (c RecoveryCase) Name() string { return fmt.Sprintf("%s after %d attempts", c.Stage, c.Earlier) }

// RecoveryCases are the moments a process can die at while carrying out
// queued work. Recovery re-runs the work only when no report was stored: a
// run whose result was recorded is finished (or stays finished) and its
// work is done, so that it is never run, posted or proposed again; a run cut
// short is interrupted and its work queued again, at most MaxWorkAttempts
// times in all.
func RecoveryCases() []RecoveryCase {
	requeued := func(run, work string) store.Recovery {
		return store.Recovery{Runs: []string{run}, Requeued: []string{work}}
	}
	finished := func(run, work string) store.Recovery {
		return store.Recovery{Finished: []string{run}, Completed: []string{work}}
	}
	return []RecoveryCase{
		{Stage: "claimed", WorkState: store.WorkPending, HasNoRun: true,
			Recovery: func(run, work string) store.Recovery { return store.Recovery{Requeued: []string{work}} }},
		{Stage: "running", RunStatus: store.RunInterrupted, WorkState: store.WorkPending, Recovery: requeued},
		{Stage: "progress", RunStatus: store.RunInterrupted, WorkState: store.WorkPending, Recovery: requeued},
		{Stage: "reported", RunStatus: store.RunFinished, Outcome: store.OutcomeCritical, WorkState: store.WorkDone,
			FinishedAt: time.Date(2026, 11, 29, 8, 30, 36, 0, time.UTC), Recovery: finished},
		{Stage: "finished", RunStatus: store.RunFinished, Outcome: store.OutcomeCritical, WorkState: store.WorkDone, Recovery: finished},
		{Stage: "finished", Earlier: store.MaxWorkAttempts - 1, RunStatus: store.RunFinished, Outcome: store.OutcomeCritical, WorkState: store.WorkDone, Recovery: finished},
		{Stage: "running", Earlier: store.MaxWorkAttempts - 1, RunStatus: store.RunInterrupted, WorkState: store.WorkDone,
			Recovery: func(run, work string) store.Recovery {
				return store.Recovery{Runs: []string{run}, Abandoned: []string{work}}
			}},
	}
}

// CheckRecovery recovers s after a process died as c says, leaving run
// and work (the work queued as wantWork), and holds the store to what c
// expects: the recovery report, the run's and the work's states, what can
// be claimed next, and that recovering again changes nothing.
func CheckRecovery(t *testing.T, s store.Store, c RecoveryCase, wantWork, run, work string) {
	t.Helper()
	ctx := t.Context()
	require.Equal(t, wantWork, work)
	rec, err := s.MarkInterrupted(ctx)
	require.NoError(t, err)
	require.Equal(t, c.Recovery(run, work), rec)

	got, err := s.GetWork(ctx, wantWork)
	require.NoError(t, err)
	require.Equal(t, c.WorkState, got.State)
	require.Equal(t, c.Earlier+1, got.Attempts)
	if c.HasNoRun {
		require.Empty(t, got.RunID)
	} else {
		r, err := s.GetRun(ctx, run)
		require.NoError(t, err)
		require.Equal(t, c.RunStatus, r.Status)
		require.Equal(t, c.Outcome, r.Outcome)
		if !c.FinishedAt.IsZero() {
			require.True(t, c.FinishedAt.Equal(r.FinishedAt), "the run ended when its report says, not at recovery: %s", r.FinishedAt)
		}
	}
	claimed, err := s.ClaimWork(ctx)
	if c.WorkState == store.WorkPending {
		require.NoError(t, err)
		require.Equal(t, wantWork, claimed.ID)
	} else {
		require.ErrorIs(t, err, store.ErrNoWork, "nothing is run again")
	}

	again, err := s.MarkInterrupted(ctx)
	require.NoError(t, err)
	require.True(t, again.Empty(), "recovery is idempotent")
}

// testRecoveryNeverReRunsARunWhoseReportWasStored walks RecoveryCases,
// with the dying process played through the Alive seam.
func testRecoveryNeverReRunsARunWhoseReportWasStored(t *testing.T, parent *Env) {
	// Each case needs a database of its own; the parent's is left unused.
	for _, tc := range RecoveryCases() {
		t.Run(tc.Name(), func(t *testing.T) {
			e := NewEnv(t, parent.backend)
			s, ctx := e.S, t.Context()
			w, _, err := s.Enqueue(ctx, store.Work{Trigger: store.TriggerAlert, Runbook: "sglang-pd-wedge"})
			require.NoError(t, err)
			for i := range tc.Earlier {
				dieAt(t, e, fmt.Sprintf("storetest/earlier-%d", i), "running")
				_, err := s.MarkInterrupted(ctx)
				require.NoError(t, err)
			}
			run, work := dieAt(t, e, "storetest/last", tc.Stage)
			CheckRecovery(t, s, tc, w.ID, run, work)
		})
	}
}

// Work whose claimer died MaxWorkAttempts times is abandoned rather than fed to
// a fourth process.
func testMarkInterruptedAbandonsWorkThatKeepsCrashing(t *testing.T, e *Env) {
	s, ctx := e.S, t.Context()
	w, _, err := s.Enqueue(ctx, store.Work{Trigger: store.TriggerAlert, Runbook: "poison"})
	require.NoError(t, err)
	for attempt := 1; attempt <= 3; attempt++ {
		_, work := dieAt(t, e, fmt.Sprintf("storetest/claimer-%d", attempt), "claimed")
		require.Equal(t, w.ID, work)
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
