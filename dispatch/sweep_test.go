package dispatch

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/inventory"
	"github.com/runbot/runbot/runbooks/bind"
	"github.com/runbot/runbot/runbooks/catalog"
	"github.com/runbot/runbot/runbooks/engine"
	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/store"
)

// One replica (A) holds a lease, runs a remediation and dies without a
// word. The other (B) renews its own lease and sweeps at the production
// intervals. Until A's lease expires, B leaves A's rows alone; at the first
// sweep after, B interrupts A's run and plan and runs A's work again
// itself. Time is synctest's, so the 30 s lease costs nothing.
func TestSweepRecoversAReplicaOnceItsLeaseExpires(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		path := filepath.Join(t.TempDir(), "runbot.db")
		open := func(owner string) *store.SQLite {
			st, err := store.Open(ctx, path, store.WithOwner(owner))
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, st.Close()) })
			return st
		}
		a, b := open("replica-a"), open("replica-b")
		dir := t.TempDir()

		_, err := a.Heartbeat(ctx, store.DefaultLeaseTTL)
		require.NoError(t, err)
		_, _, err = a.Enqueue(ctx, store.Work{Trigger: store.TriggerChat, Runbook: "stuck-worker", RequestedBy: requester,
			Params: map[string]string{"host": "here", "dir": dir}})
		require.NoError(t, err)
		w, err := a.ClaimWork(ctx)
		require.NoError(t, err)
		run, err := a.CreateRun(ctx, store.Run{Runbook: "stuck-worker", Trigger: store.TriggerChat, RequestedBy: requester, Params: w.Params, WorkID: w.ID})
		require.NoError(t, err)
		plan, _, err := a.CreatePlan(ctx, store.Plan{RunID: run.ID, Remediation: "restart", Diagnosis: "worker_wedged", Deployment: "here",
			Hash: "h1", Body: []byte(`{}`), RequestedBy: requester, Policy: store.Policy{MinApprovals: 1}})
		require.NoError(t, err)
		_, err = a.RecordApproval(ctx, store.Approval{PlanID: plan.ID, User: "U0AAA", Decision: store.Approve, PlanHash: "h1"})
		require.NoError(t, err)
		_, err = a.TransitionPlan(ctx, store.Transition{PlanID: plan.ID, From: store.PlanApproved, To: store.PlanApplying})
		require.NoError(t, err)
		diedAt := time.Now()

		d := sweepDispatcher(t, b)
		loops, stop := context.WithCancel(context.WithoutCancel(ctx))
		done := make(chan struct{}, 2)
		go func() {
			store.KeepAlive(loops, b, store.DefaultHeartbeat, store.DefaultLeaseTTL, slog.New(slog.DiscardHandler), nil)
			done <- struct{}{}
		}()
		go func() { d.SweepEvery(loops, store.DefaultRecoveryInterval, nil); done <- struct{}{} }()

		// The last sweep before the lease expires is at +30s exactly,
		// when it has just expired; one nanosecond before, it holds.
		time.Sleep(store.DefaultLeaseTTL - time.Nanosecond - time.Since(diedAt))
		synctest.Wait()
		got, err := b.GetRun(ctx, run.ID)
		require.NoError(t, err)
		require.Equal(t, store.RunRunning, got.Status, "A's lease still holds")
		p, err := b.GetPlan(ctx, plan.ID)
		require.NoError(t, err)
		require.Equal(t, store.PlanApplying, p.State)

		time.Sleep(store.DefaultRecoveryInterval)
		synctest.Wait()
		require.NoError(t, d.Idle(ctx))
		got, err = b.GetRun(ctx, run.ID)
		require.NoError(t, err)
		require.Equal(t, store.RunInterrupted, got.Status)
		p, err = b.GetPlan(ctx, plan.ID)
		require.NoError(t, err)
		require.Equal(t, store.PlanInterrupted, p.State, "never re-applied without a new approval")
		again, err := b.GetWork(ctx, w.ID)
		require.NoError(t, err)
		require.Equal(t, store.WorkDone, again.State, "B ran A's work again")
		require.Equal(t, 2, again.Attempts)
		rerun, err := b.GetRun(ctx, again.RunID)
		require.NoError(t, err)
		require.Equal(t, "replica-b", rerun.Owner)
		require.Equal(t, store.RunFinished, rerun.Status)

		stop()
		<-done
		<-done
		require.NoError(t, d.Shutdown(ctx))
		replicas, err := b.ListReplicas(ctx)
		require.NoError(t, err)
		require.Len(t, replicas, 2)
		for _, r := range replicas {
			require.False(t, r.Expires.After(time.Now()), "%s: A's lease lapsed, B resigned as it stopped", r.Owner)
		}
	})
}

// sweepDispatcher is a chatless dispatcher on st with the test runbooks.
func sweepDispatcher(t *testing.T, st store.Store) *Dispatcher {
	t.Helper()
	cat, problems, err := catalog.Load("testdata/runbooks")
	require.NoError(t, err)
	require.Empty(t, problems)
	inv, err := inventory.Load("testdata/inventory.yaml")
	require.NoError(t, err)
	eng := &engine.Engine{Targets: &bind.InventoryTargets{Inventory: inv, Runners: bind.LocalRunners{}}}
	d, err := New(Config{}, Deps{Catalog: cat, Engine: eng, Remediator: &remediation.Remediator{Engine: eng, Store: st, Catalog: cat},
		Store: st, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	return d
}

// A plan gets its deciding approval on a replica that dies before it
// starts applying it: the plan stays approved, owned by nobody. A sweep
// leaves it alone for strandedAfter (the replica that took the click moves
// it within a second) and then applies it once: the approval stands; only
// the apply was lost.
func TestSweepAppliesAPlanStrandedByADeadReplica(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		path := filepath.Join(t.TempDir(), "runbot.db")
		st, err := store.Open(ctx, path, store.WithOwner("replica-b"))
		require.NoError(t, err)
		defer func() { require.NoError(t, st.Close()) }()
		d := sweepDispatcher(t, st)
		d.current().rem.Groups = remediation.Groups{"oncall": {"U0AAA", "U0BBB"}}
		dir := t.TempDir()
		_, err = d.Submit(ctx, Request{Runbook: "stuck-worker", Params: map[string]string{"host": "here", "dir": dir}, RequestedBy: requester, Source: store.TriggerChat})
		require.NoError(t, err)
		require.NoError(t, d.Idle(ctx))
		plans, err := st.ListPlans(ctx, store.PlanFilter{States: []store.PlanState{store.PlanProposed}})
		require.NoError(t, err)
		require.Len(t, plans, 1)
		plan := plans[0]
		// The clicks the dead replica recorded.
		for _, u := range []string{"U0AAA", "U0BBB"} {
			_, err := st.RecordApproval(ctx, store.Approval{PlanID: plan.ID, User: u, Decision: store.Approve, PlanHash: plan.Hash})
			require.NoError(t, err)
		}
		restarts := func() int {
			b, err := os.ReadFile(filepath.Join(dir, "applied.log"))
			if os.IsNotExist(err) {
				return 0
			}
			require.NoError(t, err)
			return strings.Count(string(b), "restarted\n")
		}

		time.Sleep(strandedAfter - time.Second)
		_, err = d.Sweep(ctx)
		require.NoError(t, err)
		require.NoError(t, d.Idle(ctx))
		got, err := st.GetPlan(ctx, plan.ID)
		require.NoError(t, err)
		require.Equal(t, store.PlanApproved, got.State, "within strandedAfter the click's replica may still apply it")

		time.Sleep(time.Second)
		for range 2 {
			_, err = d.Sweep(ctx)
			require.NoError(t, err)
			require.NoError(t, d.Idle(ctx))
		}
		got, err = st.GetPlan(ctx, plan.ID)
		require.NoError(t, err)
		require.Equal(t, store.PlanDone, got.State)
		require.Equal(t, 1, restarts(), "applied once")
		events, err := st.Audit(ctx, store.AuditFilter{PlanID: plan.ID, Kind: store.AuditPlanState})
		require.NoError(t, err)
		require.Equal(t, "U0BBB", events[len(events)-1].Actor, "applied as the approver whose click decided it")
		require.NoError(t, d.Shutdown(ctx))
	})
}
