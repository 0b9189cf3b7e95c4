package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/store"
)

// leaseTests hold the store to replica liveness by lease: an owner that
// renews its lease is alive to every process, whatever its host, and one
// whose lease expired is recovered by whichever process sweeps next.
var leaseTests = []test{
	{"HeartbeatRegistersAndRenews", testHeartbeatRegistersAndRenews},
	{"HeartbeatRefusesBadTTL", testHeartbeatRefusesBadTTL},
	{"RecoversOnceTheLeaseExpires", testRecoversOnceTheLeaseExpires},
	{"ResignedLeaseIsRecoveredAtOnce", testResignedLeaseIsRecoveredAtOnce},
	{"RenewingReplicaIsNeverRecovered", testRenewingReplicaIsNeverRecovered},
}

// A first heartbeat registers the lease, later ones extend it and keep its
// registration time; a renewal after the lease expired still renews it and
// says that it had lapsed.
func testHeartbeatRegistersAndRenews(t *testing.T, e *Env) {
	ctx := t.Context()
	a := e.OpenAs(t, "storetest/replica-a")
	r, err := a.Heartbeat(ctx, store.DefaultLeaseTTL)
	require.NoError(t, err)
	require.Equal(t, store.Replica{Owner: "storetest/replica-a", Since: Epoch, Renewed: Epoch, Expires: Epoch.Add(store.DefaultLeaseTTL)}, r)

	e.Clock.Advance(store.DefaultHeartbeat)
	r, err = a.Heartbeat(ctx, store.DefaultLeaseTTL)
	require.NoError(t, err)
	require.Equal(t, Epoch, r.Since)
	require.Equal(t, Epoch.Add(store.DefaultHeartbeat+store.DefaultLeaseTTL), r.Expires)

	e.Clock.Advance(store.DefaultLeaseTTL + time.Second)
	r, err = a.Heartbeat(ctx, store.DefaultLeaseTTL)
	var lapsed *store.LeaseLapsedError
	require.ErrorAs(t, err, &lapsed)
	require.Equal(t, "storetest/replica-a", lapsed.Owner)
	require.Equal(t, Epoch.Add(store.DefaultHeartbeat+store.DefaultLeaseTTL), lapsed.Expired)
	require.Equal(t, e.Clock.Now().Add(store.DefaultLeaseTTL), r.Expires, "a lapsed lease is renewed all the same")

	list, err := e.S.ListReplicas(ctx)
	require.NoError(t, err)
	require.Equal(t, []store.Replica{r}, list)
}

// A heartbeat with a TTL that is not positive is refused and changes
// nothing.
func testHeartbeatRefusesBadTTL(t *testing.T, e *Env) {
	for _, ttl := range []time.Duration{0, -time.Second} {
		t.Run(ttl.String(), func(t *testing.T) {
			_, err := e.S.Heartbeat(t.Context(), ttl)
			require.ErrorContains(t, err, "ttl must be positive")
			list, err := e.S.ListReplicas(t.Context())
			require.NoError(t, err)
			require.Empty(t, list)
		})
	}
}

// A replica takes a lease and dies mid-remediation. Its liveness check
// (Options.Alive, the host-local one) still says it runs, as it would for
// a process on another host; the lease alone decides. Until it expires, no
// sweep touches its rows; after, the next sweep of another replica
// interrupts its run and plan, requeues its work and releases its lock,
// once.
func testRecoversOnceTheLeaseExpires(t *testing.T, e *Env) {
	ctx := t.Context()
	a := e.OpenAs(t, "storetest/replica-a")
	b := e.OpenAs(t, "storetest/replica-b")
	_, err := a.Heartbeat(ctx, store.DefaultLeaseTTL)
	require.NoError(t, err)
	left := midRemediation(t, a, "a")
	_, err = a.Acquire(ctx, "deployment/dsv4", "replica-a plan "+left.Plan, 30*time.Minute)
	require.NoError(t, err)

	for _, d := range []time.Duration{0, store.DefaultLeaseTTL - time.Nanosecond} {
		e.Clock.Advance(d)
		rec, err := b.MarkInterrupted(ctx)
		require.NoError(t, err)
		require.True(t, rec.Empty(), "at +%s the lease holds: %+v", d, rec)
	}
	e.Clock.Advance(time.Nanosecond)
	rec, err := b.MarkInterrupted(ctx)
	require.NoError(t, err)
	require.Equal(t, store.Recovery{Runs: []string{left.Run}, Plans: []string{left.Plan}, Requeued: []string{left.Work},
		Locks: []string{"deployment/dsv4"}}, rec)
	_, err = b.Acquire(ctx, "deployment/dsv4", "replica-b plan new", 30*time.Minute)
	require.NoError(t, err, "the dead replica's deployment lock went with it")

	plan, err := b.GetPlan(ctx, left.Plan)
	require.NoError(t, err)
	require.Equal(t, store.PlanInterrupted, plan.State)
	_, err = a.StartAction(ctx, store.ActionRecord{PlanID: plan.ID, Index: 1, Target: "decode@gpu-1", Action: "systemd_restart"})
	var conflict *store.StateConflictError
	require.ErrorAs(t, err, &conflict, "the replica that lost its lease cannot go on applying")

	again, err := e.S.MarkInterrupted(ctx)
	require.NoError(t, err)
	require.True(t, again.Empty(), "%+v", again)
}

// A replica that resigns its lease (a clean exit) leaves what it owned to
// the next sweep, without waiting for the TTL.
func testResignedLeaseIsRecoveredAtOnce(t *testing.T, e *Env) {
	ctx := t.Context()
	a := e.OpenAs(t, "storetest/replica-a")
	_, err := a.Heartbeat(ctx, store.DefaultLeaseTTL)
	require.NoError(t, err)
	run, err := a.CreateRun(ctx, store.Run{Runbook: "sglang-pd-wedge", Trigger: store.TriggerChat})
	require.NoError(t, err)
	rec, err := e.S.MarkInterrupted(ctx)
	require.NoError(t, err)
	require.True(t, rec.Empty(), "%+v", rec)

	require.NoError(t, a.Resign(ctx))
	rec, err = e.S.MarkInterrupted(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{run.ID}, rec.Runs)
}

// A replica that renews every DefaultHeartbeat keeps its rows through any
// number of sweeps by others, over many lease lifetimes.
func testRenewingReplicaIsNeverRecovered(t *testing.T, e *Env) {
	ctx := t.Context()
	a := e.OpenAs(t, "storetest/replica-a")
	b := e.OpenAs(t, "storetest/replica-b")
	_, err := a.Heartbeat(ctx, store.DefaultLeaseTTL)
	require.NoError(t, err)
	left := midRemediation(t, a, "a")
	_, err = a.Acquire(ctx, "deployment/dsv4", "replica-a plan "+left.Plan, 30*time.Minute)
	require.NoError(t, err)
	for range 20 {
		e.Clock.Advance(store.DefaultHeartbeat)
		_, err := a.Heartbeat(ctx, store.DefaultLeaseTTL)
		require.NoError(t, err)
		rec, err := b.MarkInterrupted(ctx)
		require.NoError(t, err)
		require.True(t, rec.Empty(), "%+v", rec)
	}
	run, err := b.GetRun(ctx, left.Run)
	require.NoError(t, err)
	require.Equal(t, store.RunRunning, run.Status)
	_, err = b.Acquire(ctx, "deployment/dsv4", "replica-b plan new", 30*time.Minute)
	var locked *store.LockedError
	require.ErrorAs(t, err, &locked, "a live replica keeps its lock")
}
