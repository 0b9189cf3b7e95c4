package store_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver, to ask each node what it is
	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/store"
	"github.com/runbot/runbot/store/internal/pgtest"
	"github.com/runbot/runbot/store/storetest"
)

// The failover tests run the store against a real primary with a real
// streaming standby in synchronous replication (pgtest.Pair), reached
// through the multi-host URL a deployment uses
// (postgres://...@primary,standby/db?target_session_attrs=read-write), at
// the production defaults: the lease, the heartbeat, the connect timeout.

// What a commit returned success for is on the standby: the primary holds
// its answer until the standby has flushed it (a commit waits while the
// standby is frozen). So after the primary is killed and the standby
// promoted, every run, alert and work item recorded is there, through the
// same URL, for the store that was open and for a new process.
//
// With asynchronous replication the primary answers a commit once its own
// disk has it and ships it after: the writes of the last moment before the
// crash (the replication lag: milliseconds, seconds under load) would have
// returned success and be missing after the promotion: an alert answered
// 2xx and never run, a finished run back to running, a claim or a lease
// renewal undone (a lease then ends sooner than its holder believes, and
// another replica could take what the holder still thinks it holds).
func TestFailoverKeepsCommittedWrites(t *testing.T) {
	p := pgtest.NewPair(t)
	ctx := testCtx(t)
	st := openPostgresAt(t, p.DSN())

	require.NoError(t, p.Standby.Freeze())
	answered := make(chan error, 1)
	go func() {
		_, err := st.RecordAlert(ctx, "held", alertPayload("firing"), time.Now())
		answered <- err
	}()
	select {
	case err := <-answered:
		t.Fatalf("a commit was answered (%v) before the standby had it", err)
	case <-time.After(time.Second):
	}
	require.NoError(t, p.Standby.Thaw())
	require.NoError(t, <-answered)

	var runs, finished, work []string
	for i := range 10 {
		run := mkRun(t, st)
		runs = append(runs, run.ID)
		if i%2 == 0 {
			_, err := st.FinishRun(ctx, run.ID, store.RunFinished, store.OutcomeCritical, finalReportJSON(run.ID))
			require.NoError(t, err)
			finished = append(finished, run.ID)
		}
		_, err := st.RecordAlert(ctx, fmt.Sprintf("fp-%d", i), alertPayload("firing"), time.Now())
		require.NoError(t, err)
		w, _, err := st.Enqueue(ctx, store.Work{Key: fmt.Sprintf("alert-%d", i), Trigger: store.TriggerAlert, Runbook: "sglang-pd-wedge",
			RequestedBy: "alertmanager"})
		require.NoError(t, err)
		work = append(work, w.ID)
	}

	require.NoError(t, p.KillPrimary())
	require.NoError(t, p.Promote())
	require.False(t, inRecovery(t, p.Standby), "the standby is the primary now")
	// A pooled connection to the dead primary fails the one operation that
	// next takes it, if it was idle for less than a second (pgx pings one
	// idle for longer before reuse, and database/sql then drops it without
	// an error). Callers retry, as serve's readiness probe does here.
	failed := 0
	for st.Ping(ctx) != nil {
		failed++
		require.LessOrEqual(t, failed, 8, "one failure per pooled connection (8) at most")
	}

	for name, s := range map[string]store.Store{"the open store": st, "a new process": openPostgresAt(t, p.DSN())} {
		for _, id := range runs {
			run, err := s.GetRun(ctx, id)
			require.NoError(t, err, name)
			want := store.RunRunning
			if slices.Contains(finished, id) {
				want = store.RunFinished
			}
			require.Equal(t, want, run.Status, "%s: run %s", name, id)
		}
		for i := range 10 {
			got, err := s.AlertDeliveries(ctx, fmt.Sprintf("fp-%d", i))
			require.NoError(t, err, name)
			require.Len(t, got, 1, name)
		}
		got, err := s.AlertDeliveries(ctx, "held")
		require.NoError(t, err, name)
		require.Len(t, got, 1, "%s: the write that waited for the standby", name)
		for _, id := range work {
			w, err := s.GetWork(ctx, id)
			require.NoError(t, err, name)
			require.Equal(t, store.WorkPending, w.State, name)
		}
	}
}

// One store stays open across the crash of the primary and the promotion
// of the standby, with writers queueing work and claimers claiming and
// completing it as the dispatcher does, under the deadline of a lease
// renewal (DefaultHeartbeat), and the replica lease held as serve holds
// it. The store needs no restart: writes succeed again within a heartbeat
// of the promotion (the figure is logged). Afterwards every write that
// returned success is there, and every work item was claimed exactly
// once, including the ones whose claim committed unanswered (handed back
// by the next sweep) and whose enqueue did (the writer saw an error).
func TestFailoverStoreFollowsPromotion(t *testing.T) {
	p := pgtest.NewPair(t)
	ctx := testCtx(t)
	st := openPostgresAt(t, p.DSN())
	stopLease, err := store.HoldLease(ctx, st, slog.New(slog.DiscardHandler), nil)
	require.NoError(t, err)
	defer stopLease()

	var (
		mu          sync.Mutex
		queued      []string           // work whose Enqueue returned success
		claims      = map[string]int{} // work ID -> claims that returned it
		killed      time.Time
		firstWrite  time.Time
		failedWrite int
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 3 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				began := time.Now()
				wctx, cancel := context.WithTimeout(ctx, store.DefaultHeartbeat)
				w, _, err := st.Enqueue(wctx, store.Work{Key: fmt.Sprintf("w%d-%d", g, i), Trigger: store.TriggerAlert,
					Runbook: "sglang-pd-wedge", RequestedBy: "alertmanager"})
				cancel()
				mu.Lock()
				if err == nil {
					queued = append(queued, w.ID)
					if !killed.IsZero() && began.After(killed) && firstWrite.IsZero() {
						firstWrite = time.Now()
					}
				} else {
					failedWrite++
				}
				mu.Unlock()
				if err != nil {
					time.Sleep(10 * time.Millisecond)
				}
			}
		})
	}
	claim := func() (store.Work, error) {
		cctx, cancel := context.WithTimeout(ctx, store.DefaultHeartbeat)
		defer cancel()
		return st.ClaimWork(cctx)
	}
	complete := func(id string) {
		// As the dispatcher does: until the store takes it; work done
		// already (a completion that committed unanswered) is fine.
		for {
			cctx, cancel := context.WithTimeout(ctx, store.DefaultHeartbeat)
			_, err := st.CompleteWork(cctx, id)
			cancel()
			var conflict *store.StateConflictError
			if err == nil || errors.As(err, &conflict) {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	record := func(w store.Work) {
		mu.Lock()
		claims[w.ID]++
		mu.Unlock()
	}
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				w, err := claim()
				if err != nil {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				record(w)
				complete(w.ID)
			}
		})
	}

	time.Sleep(time.Second)
	require.NoError(t, p.KillPrimary())
	mu.Lock()
	killed = time.Now()
	mu.Unlock()
	require.NoError(t, p.Promote())
	promoted := time.Now()
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return !firstWrite.IsZero()
	}, store.DefaultHeartbeat, 10*time.Millisecond, "no write succeeded within a heartbeat of the promotion")
	time.Sleep(time.Second) // more writes and claims on the new primary
	close(stop)
	wg.Wait()
	t.Logf("kill to first successful write %s (pg_ctl promote returned %s after the kill); %d writes succeeded, %d failed",
		firstWrite.Sub(killed).Round(time.Millisecond), promoted.Sub(killed).Round(time.Millisecond), len(queued), failedWrite)

	// serve's next sweep hands back what was claimed unanswered; the
	// claimers then drain the queue.
	rec, err := st.MarkInterrupted(ctx)
	require.NoError(t, err)
	require.Empty(t, rec.Runs, "no run was interrupted")
	require.Empty(t, rec.Requeued, "no live owner's work was requeued")
	for {
		w, err := claim()
		if errors.Is(err, store.ErrNoWork) {
			break
		}
		require.NoError(t, err)
		record(w)
		complete(w.ID)
	}

	for _, id := range queued {
		w, err := st.GetWork(ctx, id)
		require.NoError(t, err, "work whose enqueue returned success is there")
		require.Equal(t, store.WorkDone, w.State, id)
	}
	var rows, done int
	require.NoError(t, st.DB().QueryRowContext(ctx, `SELECT count(*), count(*) FILTER (WHERE state = 'done') FROM work`).Scan(&rows, &done))
	require.Equal(t, rows, done, "nothing left pending or started")
	require.Len(t, claims, rows, "every item was claimed")
	for id, n := range claims {
		require.Equal(t, 1, n, "work %s claimed once", id)
		w, err := st.GetWork(ctx, id)
		require.NoError(t, err)
		require.Equal(t, 1, w.Attempts, "work %s counts one attempt", id)
	}
}

// The primary goes silent instead of dying (its machine hangs, or the
// network to it drops everything): its connections neither answer nor
// close, and a new connection to it is accepted by the kernel and never
// answered. Once the standby is promoted, the store writes again within
// the deadline of an operation on a silent connection (DefaultHeartbeat)
// plus the connect timeout on the silent host, before a lease renewed just
// before the primary went silent runs out. Without a connect timeout, every
// new connection would wait on the first host of the URL past any write's
// deadline and never reach the new primary.
func TestFailoverSilentPrimary(t *testing.T) {
	p := pgtest.NewPair(t)
	ctx := testCtx(t)
	st := openPostgresAt(t, p.DSN())

	var (
		mu         sync.Mutex
		silent     time.Time
		firstWrite time.Time
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				began := time.Now()
				wctx, cancel := context.WithTimeout(ctx, store.DefaultHeartbeat)
				_, _, err := st.Enqueue(wctx, store.Work{Key: fmt.Sprintf("w%d-%d", g, i), Trigger: store.TriggerAlert,
					Runbook: "sglang-pd-wedge", RequestedBy: "alertmanager"})
				cancel()
				mu.Lock()
				if err == nil && !silent.IsZero() && began.After(silent) && firstWrite.IsZero() {
					firstWrite = time.Now()
				}
				mu.Unlock()
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
	defer func() {
		close(stop)
		wg.Wait()
	}()

	time.Sleep(time.Second)
	require.NoError(t, p.Primary.Freeze())
	mu.Lock()
	silent = time.Now()
	mu.Unlock()
	require.NoError(t, p.Promote())
	bound := store.DefaultLeaseTTL - store.DefaultHeartbeat
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return !firstWrite.IsZero()
	}, bound, 10*time.Millisecond, "no write succeeded within %s of the primary going silent", bound)
	t.Logf("primary silent to first successful write %s", firstWrite.Sub(silent).Round(time.Millisecond))
}

// The primary dies while a work claim waits for the standby to confirm its
// commit: the claim committed, on the standby too, but its claimer got no
// answer, only a broken connection. Nobody runs the work, and it is
// started by a live process, so no sweep would ever requeue it. The
// store remembers the claim it could not confirm; its next sweep hands the
// work back to the queue, its attempt uncounted, and it is claimed once.
func TestFailoverUnansweredClaimIsHandedBack(t *testing.T) {
	p := pgtest.NewPair(t)
	ctx := testCtx(t)
	st := openPostgresAt(t, p.DSN())
	w, _, err := st.Enqueue(ctx, store.Work{Key: "alert-1", Trigger: store.TriggerAlert, Runbook: "sglang-pd-wedge", RequestedBy: "alertmanager"})
	require.NoError(t, err)
	primary, standby := nodeDB(t, p.Primary), nodeDB(t, p.Standby)

	// Frozen, the standby's kernel still takes the WAL the primary sends;
	// the standby reads it once thawed.
	require.NoError(t, p.Standby.Freeze())
	claimed := make(chan error, 1)
	go func() {
		_, err := st.ClaimWork(ctx)
		claimed <- err
	}()
	require.Eventually(t, func() bool {
		var n int
		err := primary.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'SyncRep'`).Scan(&n)
		return err == nil && n == 1
	}, time.Minute, 10*time.Millisecond, "the claim waits for the standby")
	var flushed string
	require.NoError(t, primary.QueryRowContext(ctx, `SELECT pg_current_wal_flush_lsn()::text`).Scan(&flushed))
	require.NoError(t, p.KillPrimary())
	require.Error(t, <-claimed, "the claim got no answer")
	require.NoError(t, p.Standby.Thaw())
	require.Eventually(t, func() bool {
		var got bool
		err := standby.QueryRowContext(ctx, `SELECT pg_last_wal_receive_lsn() >= $1::pg_lsn`, flushed).Scan(&got)
		return err == nil && got
	}, time.Minute, 10*time.Millisecond, "the standby receives the claim's commit")
	require.NoError(t, p.Promote())

	got, err := st.GetWork(ctx, w.ID)
	require.NoError(t, err)
	require.Equal(t, store.WorkStarted, got.State, "the claim committed")
	rec, err := st.MarkInterrupted(ctx)
	require.NoError(t, err)
	require.Equal(t, store.Recovery{Unconfirmed: []string{w.ID}}, rec)
	got, err = st.GetWork(ctx, w.ID)
	require.NoError(t, err)
	require.Equal(t, store.WorkPending, got.State)
	require.Zero(t, got.Attempts, "nothing ran")

	again, err := st.ClaimWork(ctx)
	require.NoError(t, err)
	require.Equal(t, w.ID, again.ID)
	require.Equal(t, 1, again.Attempts)
	_, err = st.CompleteWork(ctx, w.ID)
	require.NoError(t, err)
	rec, err = st.MarkInterrupted(ctx)
	require.NoError(t, err)
	require.True(t, rec.Empty(), "handed back once: %+v", rec)
}

// Two replicas (A and B, one store each, at the production lease and
// heartbeat on a shared clock) hold their leases; A has claimed work and
// holds a deployment lock. The database is gone for longer than the lease
// (the primary killed, the standby promoted 40 s later), so every renewal
// fails and both leases expire.
//
// The lease contract holds across it. A lease expired only because the
// database was out of everyone's reach proves nothing: B, whose own
// renewals failed as well, recovers none of A's rows, not before it renews
// nor for a lease's length after (by then A has renewed), so nothing A is
// running is run twice. A stops acting: until it renews it claims nothing
// (ErrLeaseExpired), and its renewal says the lease had lapsed. The lock
// has one holder until it expires.
//
// Then A stays cut off while B is not: once A's lease expired, B's sweep
// requeues A's work and releases its lock, B takes both, and A learns it
// lost them: it cannot refresh the lock, complete the work or claim more.
func TestFailoverLongerThanTheLease(t *testing.T) {
	p := pgtest.NewPair(t)
	ctx := testCtx(t)
	clock := storetest.NewClock()
	a := openPostgresAt(t, p.DSN(), store.WithOwner("failover/replica-a"), store.WithNow(clock.Now))
	b := openPostgresAt(t, p.DSN(), store.WithOwner("failover/replica-b"), store.WithNow(clock.Now))
	renew := func(s store.Store) error {
		rctx, cancel := context.WithTimeout(ctx, store.DefaultHeartbeat)
		defer cancel()
		_, err := s.Heartbeat(rctx, store.DefaultLeaseTTL)
		return err
	}
	require.NoError(t, renew(a))
	require.NoError(t, renew(b))
	for _, key := range []string{"alert-1", "alert-2", "alert-3"} {
		_, _, err := a.Enqueue(ctx, store.Work{Key: key, Trigger: store.TriggerAlert, Runbook: "sglang-pd-wedge", RequestedBy: "alertmanager"})
		require.NoError(t, err)
		clock.Advance(time.Second) // claimed in this order
	}
	first, err := a.ClaimWork(ctx)
	require.NoError(t, err)
	lock, err := a.Acquire(ctx, "deployment/dsv4", "replica-a plan p1", 30*time.Minute)
	require.NoError(t, err)

	require.NoError(t, p.KillPrimary())
	for range 4 {
		clock.Advance(store.DefaultHeartbeat)
		require.Error(t, renew(a), "no database to renew in")
		require.Error(t, renew(b), "no database to renew in")
	}
	require.NoError(t, p.Promote())

	rec, err := b.MarkInterrupted(ctx)
	require.NoError(t, err)
	require.True(t, rec.Empty(), "B could not renew either: A's expired lease proves nothing: %+v", rec)
	_, err = a.ClaimWork(ctx)
	require.ErrorIs(t, err, store.ErrLeaseExpired, "A claims nothing before it renews")
	_, err = a.Acquire(ctx, "deployment/dsv5", "replica-a plan p2", 30*time.Minute)
	require.ErrorIs(t, err, store.ErrLeaseExpired)

	var lapsed *store.LeaseLapsedError
	require.ErrorAs(t, renew(b), &lapsed, "B learns its lease lapsed")
	rec, err = b.MarkInterrupted(ctx)
	require.NoError(t, err)
	require.True(t, rec.Empty(), "A may not have renewed yet: %+v", rec)
	require.ErrorAs(t, renew(a), &lapsed, "A learns its lease lapsed")
	_, err = b.Acquire(ctx, "deployment/dsv4", "replica-b plan p3", 30*time.Minute)
	var locked *store.LockedError
	require.ErrorAs(t, err, &locked, "the lock holds until it expires")
	require.Equal(t, "replica-a plan p1", locked.Holder)
	for range 4 {
		clock.Advance(store.DefaultHeartbeat)
		require.NoError(t, renew(a))
		require.NoError(t, renew(b))
		rec, err := b.MarkInterrupted(ctx)
		require.NoError(t, err)
		require.True(t, rec.Empty(), "A renews: %+v", rec)
	}
	_, err = a.CompleteWork(ctx, first.ID)
	require.NoError(t, err)
	done, err := a.GetWork(ctx, first.ID)
	require.NoError(t, err)
	require.Equal(t, 1, done.Attempts, "run once")

	// A is cut off alone from here on.
	second, err := a.ClaimWork(ctx)
	require.NoError(t, err)
	lock, err = a.Refresh(ctx, lock, 30*time.Minute)
	require.NoError(t, err)
	for range 4 {
		clock.Advance(store.DefaultHeartbeat)
		require.NoError(t, renew(b))
	}
	rec, err = b.MarkInterrupted(ctx)
	require.NoError(t, err)
	require.Equal(t, store.Recovery{Requeued: []string{second.ID}, Locks: []string{"deployment/dsv4"}}, rec)
	taken, err := b.ClaimWork(ctx)
	require.NoError(t, err)
	require.Equal(t, second.ID, taken.ID)
	_, err = b.Acquire(ctx, "deployment/dsv4", "replica-b plan p3", 30*time.Minute)
	require.NoError(t, err)

	_, err = a.Refresh(ctx, lock, 30*time.Minute)
	require.ErrorIs(t, err, store.ErrLockLost, "A learns it lost the lock")
	_, err = a.CompleteWork(ctx, second.ID)
	var conflict *store.StateConflictError
	require.ErrorAs(t, err, &conflict, "A cannot complete the work B runs now")
	_, err = a.ClaimWork(ctx)
	require.ErrorIs(t, err, store.ErrLeaseExpired)
	_, err = b.CompleteWork(ctx, second.ID)
	require.NoError(t, err)
	require.ErrorAs(t, renew(a), &lapsed)
	_, err = a.ClaimWork(ctx)
	require.NoError(t, err, "renewed, A claims again")
}

// A URL may list a node that does not take writes first: a standby, or a
// demoted primary restarted as one. Without target_session_attrs, a
// connection would stay on it and every write fail for as long as the pool
// kept it; the store asks for a read-write session on its own and reaches
// the primary.
func TestFailoverSkipsReadOnlyHost(t *testing.T) {
	p := pgtest.NewPair(t)
	ctx := testCtx(t)
	u, err := url.Parse(p.URL(p.Standby, p.Primary))
	require.NoError(t, err)
	q := u.Query()
	q.Del("target_session_attrs")
	u.RawQuery = q.Encode()

	st := openPostgresAt(t, u.String())
	for i := range 20 {
		_, _, err := st.Enqueue(ctx, store.Work{Key: fmt.Sprintf("alert-%d", i), Trigger: store.TriggerAlert, Runbook: "sglang-pd-wedge",
			RequestedBy: "alertmanager"})
		require.NoError(t, err)
	}
	var recovering bool
	require.NoError(t, st.DB().QueryRowContext(ctx, `SELECT pg_is_in_recovery()`).Scan(&recovering))
	require.False(t, recovering, "the store's connections are on the primary")
	require.True(t, inRecovery(t, p.Standby), "the standby was listed first")
}

// nodeDB opens the pair's database on one node alone.
func nodeDB(t *testing.T, n *pgtest.Node) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", n.DSN())
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() }) // test cleanup
	return db
}

// inRecovery asks a node whether it is a standby.
func inRecovery(t *testing.T, n *pgtest.Node) bool {
	t.Helper()
	var got bool
	require.NoError(t, nodeDB(t, n).QueryRowContext(testCtx(t), `SELECT pg_is_in_recovery()`).Scan(&got))
	return got
}
