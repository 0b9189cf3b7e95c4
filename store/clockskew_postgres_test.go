package store_test

import (
	"database/sql"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/store"
)

// hostClock is the clock of one replica's host: the real time, shifted by
// an offset the test sets (the host's clock is off) and moves on (time
// passes, as this replica sees it, without the test waiting for it).
type hostClock struct{ offset atomic.Int64 }

func (c *hostClock) Now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

// Advance moves the host's clock on by d. Until the replica measures the
// database's clock again (a heartbeat), it takes d to have passed on the
// database too.
func (c *hostClock) Advance(d time.Duration) { c.offset.Add(int64(d)) }

// clockSkews are the host clocks the skew tests run with: one 30 s fast,
// one 30 s slow, and one in step with the database's.
var clockSkews = []struct {
	name string
	skew time.Duration
}{
	{"30s fast", 30 * time.Second},
	{"30s slow", -30 * time.Second},
	{"in step", 0},
}

// databaseNow reads the database's clock.
func databaseNow(t *testing.T, db *sql.DB) time.Time {
	t.Helper()
	var at int64
	require.NoError(t, db.QueryRowContext(t.Context(), `SELECT (extract(epoch FROM clock_timestamp()) * 1000000000)::bigint`).Scan(&at))
	return time.Unix(0, at).UTC()
}

// measureSlack is how far from the database's clock a replica's reading of
// it may be in these tests: half a round trip to the database on a busy
// machine, with room to spare, and far below the skews tested.
const measureSlack = 5 * time.Second

// Two replicas share one database; one of them runs on a host whose clock
// is off. The other renews its lease, claims work and takes a deployment
// lock. The skewed replica's sweeps and lock attempts leave them alone
// until the lease has expired by the database's clock: not 30 s early on a
// fast host (which would remediate the deployment twice), nor 30 s late
// on a slow one. The lease and lock are at their production lengths; time
// passes on the skewed host's clock alone (hostClock.Advance).
func TestClockSkewOthersLeaseHoldsByTheDatabaseClock(t *testing.T) {
	for _, tc := range clockSkews {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			dsn := postgresURL(t)
			steady := openPostgresAt(t, dsn, store.WithOwner("skew/steady"))
			host := &hostClock{}
			host.Advance(tc.skew)
			skewed := openPostgresAt(t, dsn, store.WithOwner("skew/skewed"), store.WithLocalClock(host.Now))

			before := databaseNow(t, steady.DB())
			_, err := steady.Heartbeat(ctx, store.DefaultLeaseTTL)
			require.NoError(t, err)
			_, err = skewed.Heartbeat(ctx, store.DefaultLeaseTTL)
			require.NoError(t, err)
			_, _, err = steady.Enqueue(ctx, store.Work{Key: "alert-1", Trigger: store.TriggerAlert, Runbook: "sglang-pd-wedge", RequestedBy: "alertmanager"})
			require.NoError(t, err)
			w, err := steady.ClaimWork(ctx)
			require.NoError(t, err)
			_, err = steady.Acquire(ctx, "deployment/dsv4", "steady plan p1", 30*time.Minute)
			require.NoError(t, err)
			require.Less(t, databaseNow(t, steady.DB()).Sub(before), store.DefaultHeartbeat-measureSlack,
				"the steps below assume the setup took less than a heartbeat's length")

			// Just after the lease was renewed, and a heartbeat before it
			// expires: it holds.
			for _, d := range []time.Duration{0, store.DefaultLeaseTTL - store.DefaultHeartbeat} {
				host.Advance(d)
				rec, err := skewed.MarkInterrupted(ctx)
				require.NoError(t, err)
				require.True(t, rec.Empty(), "the steady replica's lease holds: %+v", rec)
				_, err = skewed.Acquire(ctx, "deployment/dsv4", "skewed plan p2", 30*time.Minute)
				var locked *store.LockedError
				require.ErrorAs(t, err, &locked)
				require.Equal(t, "steady plan p1", locked.Holder)
			}

			// Once it expired by the database's clock, the next sweep
			// recovers what the steady replica held.
			host.Advance(store.DefaultHeartbeat + measureSlack)
			rec, err := skewed.MarkInterrupted(ctx)
			require.NoError(t, err)
			require.Equal(t, []string{w.ID}, rec.Requeued)
			require.Equal(t, []string{"deployment/dsv4"}, rec.Locks)
		})
	}
}

// A replica on a host whose clock is off renews its lease for the TTL on
// the database's clock, which the other replicas judge it by: they leave
// its work alone for that long, and it stops claiming (ErrLeaseExpired)
// as soon as the lease has expired by the database's clock, not 30 s
// before or after the others count it dead. Its next renewal measures the
// database's clock afresh. SQLite, one file on one host, keeps the host's
// clock (TestClockSkewSQLiteKeepsTheHostClock).
func TestClockSkewOwnLeaseEndsByTheDatabaseClock(t *testing.T) {
	for _, tc := range clockSkews {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			dsn := postgresURL(t)
			steady := openPostgresAt(t, dsn, store.WithOwner("skew/steady"))
			host := &hostClock{}
			host.Advance(tc.skew)
			skewed := openPostgresAt(t, dsn, store.WithOwner("skew/skewed"), store.WithLocalClock(host.Now))
			for _, key := range []string{"alert-1", "alert-2", "alert-3", "alert-4"} {
				_, _, err := steady.Enqueue(ctx, store.Work{Key: key, Trigger: store.TriggerAlert, Runbook: "sglang-pd-wedge", RequestedBy: "alertmanager"})
				require.NoError(t, err)
			}

			before := databaseNow(t, steady.DB())
			r, err := skewed.Heartbeat(ctx, store.DefaultLeaseTTL)
			require.NoError(t, err)
			after := databaseNow(t, steady.DB())
			require.WithinRange(t, r.Expires, before.Add(store.DefaultLeaseTTL-measureSlack), after.Add(store.DefaultLeaseTTL+measureSlack),
				"the lease runs for its TTL on the database's clock")
			list, err := steady.ListReplicas(ctx)
			require.NoError(t, err)
			require.Equal(t, []store.Replica{r}, list)

			w, err := skewed.ClaimWork(ctx)
			require.NoError(t, err)
			rec, err := steady.MarkInterrupted(ctx)
			require.NoError(t, err)
			require.True(t, rec.Empty(), "the skewed replica's lease holds: %+v", rec)

			host.Advance(store.DefaultLeaseTTL - store.DefaultHeartbeat)
			_, err = skewed.ClaimWork(ctx)
			require.NoError(t, err, "a heartbeat before the lease expires, it still claims")

			host.Advance(store.DefaultHeartbeat + measureSlack)
			_, err = skewed.ClaimWork(ctx)
			require.ErrorIs(t, err, store.ErrLeaseExpired)
			_, err = skewed.Acquire(ctx, "deployment/dsv4", "skewed plan p1", 30*time.Minute)
			require.ErrorIs(t, err, store.ErrLeaseExpired)

			// The renewal reads the database's clock again, by which the
			// lease had not expired: nothing lapsed, and claims go on.
			_, err = skewed.Heartbeat(ctx, store.DefaultLeaseTTL)
			require.NoError(t, err)
			_, err = skewed.ClaimWork(ctx)
			require.NoError(t, err)
			_, err = skewed.CompleteWork(ctx, w.ID)
			require.NoError(t, err)
		})
	}
}

// SQLite is one file on one host, so it keeps the host's clock, skewed or
// not: the times it writes are the host's.
func TestClockSkewSQLiteKeepsTheHostClock(t *testing.T) {
	ctx := testCtx(t)
	host := &hostClock{}
	host.Advance(30 * time.Second)
	s := openAt(t, dbPath(t), store.WithOwner("skew/skewed"), store.WithLocalClock(host.Now))
	before := host.Now().UTC()
	r, err := s.Heartbeat(ctx, store.DefaultLeaseTTL)
	require.NoError(t, err)
	require.WithinRange(t, r.Renewed, before, host.Now().UTC())
}

// An approval window is opened and closed on the database's clock: the
// plan's expiry is written as the store's Now plus the window (what the
// remediator does), and a vote after it has closed by the database's
// clock is refused, though the skewed host's clock, 30 s slow, says the
// window is still open; on a host 30 s fast it is not closed 30 s early.
func TestClockSkewApprovalWindowByTheDatabaseClock(t *testing.T) {
	const window = 10 * time.Minute
	for _, tc := range clockSkews {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			dsn := postgresURL(t)
			host := &hostClock{}
			host.Advance(tc.skew)
			skewed := openPostgresAt(t, dsn, store.WithOwner("skew/skewed"), store.WithLocalClock(host.Now))
			_, err := skewed.Heartbeat(ctx, store.DefaultLeaseTTL)
			require.NoError(t, err)
			db := databaseNow(t, skewed.DB())
			require.WithinDuration(t, db, skewed.Now(), measureSlack, "Now reads the database's clock, not the host's")

			run, err := skewed.CreateRun(ctx, store.Run{Runbook: "sglang-pd-wedge", Trigger: store.TriggerAlert})
			require.NoError(t, err)
			vote := func(p store.Plan) error {
				_, err := skewed.RecordApproval(ctx, store.Approval{PlanID: p.ID, User: "U-bob", Decision: store.Approve, PlanHash: "h1"})
				return err
			}
			// Time passes on the host's clock alone (hostClock.Advance):
			// the database's clock then reads db plus what has passed.
			passed := time.Duration(0)
			plan := func(remediation string) store.Plan {
				p, _, err := skewed.CreatePlan(ctx, store.Plan{RunID: run.ID, Remediation: remediation, Deployment: "dsv4-" + remediation,
					Hash: "h1", Body: json.RawMessage(`{}`), RequestedBy: "alertmanager",
					Policy: store.Policy{MinApprovals: 1, ExpiresAt: skewed.Now().Add(window)}})
				require.NoError(t, err)
				require.WithinDuration(t, db.Add(passed+window), p.Policy.ExpiresAt, measureSlack, "the window ends %s after now on the database's clock", window)
				return p
			}

			open := plan("open")
			host.Advance(window - time.Minute)
			passed += window - time.Minute
			require.NoError(t, vote(open), "a minute before the window closes by the database's clock, the vote counts")

			closed := plan("closed")
			host.Advance(window + measureSlack)
			var refused *store.ApprovalError
			require.ErrorAs(t, vote(closed), &refused, "after the window closed by the database's clock, the vote is refused")
			require.Equal(t, store.RefusedExpired, refused.Reason)
		})
	}
}

// WithHostClockOffset shifts the host's clock as runbot serve's test hook
// (RUNBOT_TEST_CLOCK_OFFSET) does. On PostgreSQL the store's Now still
// reads the database's clock, measured when the store opens; on SQLite it
// reads the shifted clock, which shows the offset took effect.
func TestClockSkewHostClockOffset(t *testing.T) {
	for _, tc := range clockSkews {
		t.Run(tc.name, func(t *testing.T) {
			pg := openPostgresAt(t, postgresURL(t), store.WithOwner("skew/offset"), store.WithHostClockOffset(tc.skew))
			require.WithinDuration(t, databaseNow(t, pg.DB()), pg.Now(), measureSlack, "Now reads the database's clock, not the host's")

			lite := openAt(t, dbPath(t), store.WithOwner("skew/offset"), store.WithHostClockOffset(tc.skew))
			require.WithinDuration(t, time.Now().Add(tc.skew), lite.Now(), measureSlack, "SQLite keeps the host's clock, shifted")
		})
	}
}
