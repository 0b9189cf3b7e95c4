package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/store"
)

// replicaTests hold the store to what several processes sharing one
// database rely on: each goroutine plays one process with a store of its
// own, and they all start the contested call at once.
var replicaTests = []test{
	{"WorkClaimedOnce", testReplicasClaimWorkOnce},
	{"LockHasOneHolder", testReplicasLockHasOneHolder},
	{"AlertTriggersOnce", testReplicasAlertTriggersOnce},
	{"ApprovalSettlesOnce", testReplicasApprovalSettlesOnce},
	{"ProposalSupersedes", testReplicasProposalSupersedes},
	{"RecoveryOnce", testReplicasRecoverOnce},
	{"GuardrailsCountEveryReplica", testReplicasGuardrailsCountEveryReplica},
}

// Replicas is how many processes the replica tests play.
const Replicas = 4

// openReplicas opens Replicas stores on e's database, one per process.
func openReplicas(t *testing.T, e *Env) []store.Store {
	t.Helper()
	stores := make([]store.Store, Replicas)
	for i := range stores {
		stores[i] = e.OpenAs(t, fmt.Sprintf("storetest/replica-%d", i))
	}
	return stores
}

// atOnce runs fn(i, s) for every store in a goroutine of its own; the
// goroutines are released together, so the calls overlap as much as the
// scheduler lets them.
func atOnce(stores []store.Store, fn func(i int, s store.Store)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, s := range stores {
		wg.Go(func() {
			<-start
			fn(i, s)
		})
	}
	close(start)
	wg.Wait()
}

// Replicas drain one queue at once: every item is claimed exactly once, by
// the replica whose claim returned it.
func testReplicasClaimWorkOnce(t *testing.T, e *Env) {
	const n = 40
	stores := openReplicas(t, e)
	enqueueN(t, e.S, n)
	var (
		mu      sync.Mutex
		claimed = map[string][]string{} // work ID -> owners that claimed it
	)
	atOnce(stores, func(i int, s store.Store) {
		for {
			w, err := s.ClaimWork(t.Context())
			if errors.Is(err, store.ErrNoWork) {
				return
			}
			if err != nil {
				t.Errorf("replica %d: claim: %v", i, err)
				return
			}
			mu.Lock()
			claimed[w.ID] = append(claimed[w.ID], w.Owner)
			mu.Unlock()
		}
	})
	require.Len(t, claimed, n)
	for id, owners := range claimed {
		require.Len(t, owners, 1, "work %s claimed by %v", id, owners)
		w, err := e.S.GetWork(t.Context(), id)
		require.NoError(t, err)
		require.Equal(t, store.WorkStarted, w.State)
		require.Equal(t, 1, w.Attempts, id)
		require.Equal(t, owners[0], w.Owner, "the stored owner is the replica that got it")
	}
	_, err := e.S.ClaimWork(t.Context())
	require.ErrorIs(t, err, store.ErrNoWork)
}

// Replicas race for one remediation lock, round after round: exactly one
// holds it, and every other replica is told who.
func testReplicasLockHasOneHolder(t *testing.T, e *Env) {
	stores := openReplicas(t, e)
	for round := range 10 {
		key := fmt.Sprintf("deployment/replicas-%02d", round)
		var (
			mu       sync.Mutex
			won      []store.Lock
			loserSaw []string
		)
		atOnce(stores, func(i int, s store.Store) {
			l, err := s.Acquire(t.Context(), key, fmt.Sprintf("runbot@replica-%d", i), time.Minute)
			var locked *store.LockedError
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won = append(won, l)
			case errors.As(err, &locked):
				loserSaw = append(loserSaw, locked.Holder)
			default:
				t.Errorf("replica %d: acquire %s: %v", i, key, err)
			}
		})
		require.Len(t, won, 1, key)
		require.Equal(t, slices.Repeat([]string{won[0].Holder}, Replicas-1), loserSaw, "%s: every loser names the winner", key)
	}
}

// Alertmanager delivers one alert to every replica at once: one delivery
// starts the trigger, the others are repeats of it, each is stored, and the
// trigger's work is queued once however many replicas enqueue it.
func testReplicasAlertTriggersOnce(t *testing.T, e *Env) {
	stores := openReplicas(t, e)
	for round := range 5 {
		fp := fmt.Sprintf("fp-replicas-%02d", round)
		var (
			mu      sync.Mutex
			fresh   int
			created int
			keys    = map[string]bool{}
		)
		atOnce(stores, func(i int, s store.Store) {
			st, err := s.RecordAlert(t.Context(), fp, AlertPayload("firing"), e.Clock.Now())
			if err != nil {
				t.Errorf("replica %d: record: %v", i, err)
				return
			}
			_, made, err := s.Enqueue(t.Context(), store.Work{Key: st.TriggerKey, Trigger: store.TriggerAlert, Runbook: "sglang-pd-wedge"})
			if err != nil {
				t.Errorf("replica %d: enqueue: %v", i, err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			keys[st.TriggerKey] = true
			if st.Fresh {
				fresh++
			}
			if made {
				created++
			}
		})
		require.Equal(t, 1, fresh, "%s: one delivery starts the trigger", fp)
		require.Len(t, keys, 1, "%s: every replica enqueues under the one trigger key", fp)
		require.Equal(t, 1, created, "%s: the trigger's work is queued once", fp)
		st, err := e.S.GetAlert(t.Context(), fp)
		require.NoError(t, err)
		require.Equal(t, Replicas-1, st.Repeats)
		deliveries, err := e.S.AlertDeliveries(t.Context(), fp)
		require.NoError(t, err)
		require.Len(t, deliveries, Replicas, "every delivery is kept")
		e.Clock.Advance(time.Second)
	}
	require.Len(t, AuditKinds(t, e.S, store.AuditFilter{Kind: store.AuditAlertFiring}), 5, "one alert.firing per fingerprint")
}

// A plan needs two approvals; as many approvers click at once on different
// replicas: exactly one click settles it, and it is approved once.
func testReplicasApprovalSettlesOnce(t *testing.T, e *Env) {
	stores := openReplicas(t, e)
	p := ProposePlan(t, e.S, func(p *store.Plan) { p.Policy.MinApprovals = 2 })
	var (
		mu      sync.Mutex
		settled []string
	)
	atOnce(stores, func(i int, s store.Store) {
		user := fmt.Sprintf("U-approver-%d", i)
		res, err := s.RecordApproval(t.Context(), store.Approval{PlanID: p.ID, User: user, Decision: store.Approve, PlanHash: p.Hash})
		var refused *store.ApprovalError
		switch {
		case err == nil:
		case errors.As(err, &refused) && refused.Reason == store.RefusedClosed:
			return // the plan was approved before this click counted
		default:
			t.Errorf("replica %d: approve: %v", i, err)
			return
		}
		if res.Settled {
			mu.Lock()
			settled = append(settled, user)
			mu.Unlock()
		}
	})
	require.Len(t, settled, 1, "exactly one click settles the plan")
	got, err := e.S.GetPlan(t.Context(), p.ID)
	require.NoError(t, err)
	require.Equal(t, store.PlanApproved, got.State)
	kinds := AuditKinds(t, e.S, store.AuditFilter{PlanID: p.ID, Kind: store.AuditPlanState})
	require.Equal(t, []string{"plan.state:approved"}, kinds)
}

// Replicas propose the same remediation on one deployment at once: one
// proposal is left waiting for approval, the others are superseded.
func testReplicasProposalSupersedes(t *testing.T, e *Env) {
	stores := openReplicas(t, e)
	runs := make([]store.Run, len(stores))
	for i := range runs {
		runs[i] = CreateRun(t, e.S)
	}
	atOnce(stores, func(i int, s store.Store) {
		_, _, err := s.CreatePlan(t.Context(), store.Plan{RunID: runs[i].ID, Remediation: "disable_overlap_and_restart",
			Deployment: "dsv4", Hash: fmt.Sprintf("sha256:%d", i), Body: []byte(`{}`), RequestedBy: "alertmanager"})
		if err != nil {
			t.Errorf("replica %d: create plan: %v", i, err)
		}
	})
	plans, err := e.S.ListPlans(t.Context(), store.PlanFilter{Deployment: "dsv4"})
	require.NoError(t, err)
	require.Len(t, plans, Replicas)
	var proposed, superseded int
	for _, p := range plans {
		switch p.State {
		case store.PlanProposed:
			proposed++
		case store.PlanSuperseded:
			superseded++
		}
	}
	require.Equal(t, 1, proposed, "one proposal waits for approval")
	require.Equal(t, Replicas-1, superseded)
	pending, err := e.S.PendingPlans(t.Context())
	require.NoError(t, err)
	require.Len(t, pending, 1)
}

// A process died mid-remediation and every replica starts its recovery at
// once: each of the dead process's rows is recovered by exactly one of them.
func testReplicasRecoverOnce(t *testing.T, e *Env) {
	left := crashMidRemediation(t, e, "storetest/crashed", "a")
	stores := openReplicas(t, e)
	var (
		mu    sync.Mutex
		total store.Recovery
	)
	atOnce(stores, func(i int, s store.Store) {
		rec, err := s.MarkInterrupted(t.Context())
		if err != nil {
			t.Errorf("replica %d: mark interrupted: %v", i, err)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		total.Runs = append(total.Runs, rec.Runs...)
		total.Plans = append(total.Plans, rec.Plans...)
		total.Requeued = append(total.Requeued, rec.Requeued...)
	})
	require.Equal(t, store.Recovery{Runs: []string{left.Run}, Plans: []string{left.Plan}, Requeued: []string{left.Work}}, total)
	kinds := AuditKinds(t, e.S, store.AuditFilter{PlanID: left.Plan, Kind: store.AuditPlanState})
	require.Equal(t, 1, countOf(kinds, "plan.state:interrupted"), "the plan is interrupted once: %v", kinds)
	require.Equal(t, 1, countOf(AuditKinds(t, e.S, store.AuditFilter{RunID: left.Run}), store.AuditRunInterrupted),
		"the run is interrupted once")
}

func countOf(kinds []string, kind string) int {
	n := 0
	for _, k := range kinds {
		if k == kind {
			n++
		}
	}
	return n
}

// Remediations applied by different replicas add up in the rate limit,
// and the circuit breaker sees the last one whichever replica applied it:
// each replica asks the database, not its own memory.
func testReplicasGuardrailsCountEveryReplica(t *testing.T, e *Env) {
	stores := openReplicas(t, e)
	ctx := t.Context()
	since := e.Clock.Now()
	var last store.Plan
	for i, s := range stores[:Replicas-1] {
		p := Move(t, s, Approve(t, s, ProposePlan(t, s)), store.PlanApplying)
		if i%2 == 0 {
			last = Move(t, s, Move(t, s, p, store.PlanVerifying), store.PlanDone)
		} else {
			last = Move(t, s, p, store.PlanFailed)
		}
		e.Clock.Advance(time.Second)
	}
	reader := stores[Replicas-1]
	n, err := reader.CountApplied(ctx, store.AppliedFilter{Deployment: "dsv4", Remediation: "disable_overlap_and_restart", Since: since})
	require.NoError(t, err)
	require.Equal(t, Replicas-1, n)
	// The circuit breaker reads the plans, newest first.
	plans, err := reader.ListPlans(ctx, store.PlanFilter{Deployment: "dsv4"})
	require.NoError(t, err)
	require.NotEmpty(t, plans)
	require.Equal(t, last.ID, plans[0].ID)
	require.Equal(t, last.State, plans[0].State)
}
