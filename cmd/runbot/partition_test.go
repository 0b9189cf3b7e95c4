package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/store"
	"github.com/runbot/runbot/store/storetest"
)

// TestPartitionedReplicaStopsBeforeItsLeaseLapses: two `runbot serve`
// replicas share one PostgreSQL database; replica-0 reaches it through a
// proxy the test cuts while replica-0 applies a fix, holding the
// deployment lock and a session to the target (its "restart" blocks,
// writing to a FIFO nobody reads). Cut off, replica-0 cannot renew its
// lease: it must stop the restart before its lease lapses and replica-1
// can take over, and it must not resume when the database answers again.
// Everything runs at production lease, heartbeat and sweep intervals.
func TestPartitionedReplicaStopsBeforeItsLeaseLapses(t *testing.T) {
	dsn := storetest.PostgresDatabase(t)
	cutOff, proxy := proxiedPostgres(t, dsn)
	c := newClusterOn(t, 2, []string{"cut"}, dsn, cutOff)
	applier, survivor := c.replicas[0], c.replicas[1]

	c.setState("cut", "broken")
	require.Equal(t, http.StatusOK, c.alert(survivor, "cut"))
	plan, run := c.proposed("cut")
	c.click(applier, plan, run)
	c.until("the restart started", time.Minute, func() bool { return c.restarts("cut") == 1 })
	acting := c.blockRestart("cut")
	c.until("the restart blocks on the state file", time.Minute, func() bool {
		return acting() && c.plan(plan.ID).State == store.PlanApplying
	})

	cut := time.Now()
	proxy.cut()
	var stopped, interrupted time.Duration
	c.until("the cut-off replica stops, and the survivor takes the plan over", 2*time.Minute, func() bool {
		if stopped == 0 && !acting() {
			stopped = time.Since(cut)
		}
		if interrupted == 0 && c.plan(plan.ID).State == store.PlanInterrupted {
			interrupted = time.Since(cut)
		}
		return stopped != 0 && interrupted != 0
	})
	t.Logf("cut at 0s: the cut-off replica stopped its restart at %s; the survivor interrupted the plan at %s (lease %s, sweep every %s)",
		stopped.Round(time.Millisecond), interrupted.Round(time.Millisecond), store.DefaultLeaseTTL, store.DefaultRecoveryInterval)
	require.Less(t, stopped, interrupted, "the cut-off replica stopped acting before the survivor could take over")
	require.Less(t, stopped, store.DefaultLeaseTTL, "it stopped before its lease could lapse")

	proxy.heal()
	c.until("the healed replica answers ready again", time.Minute, func() bool {
		code, _ := getReadyz(applier.port)
		return code == http.StatusOK
	})
	// Two sweeps of each replica after the heal.
	time.Sleep(2 * store.DefaultRecoveryInterval)
	require.False(t, acting(), "nothing runs the restart again")
	require.Equal(t, 1, c.restarts("cut"), "the restart was not resumed or repeated")
	require.Equal(t, store.PlanInterrupted, c.plan(plan.ID).State, "the plan stays interrupted: a new approval is needed")
}
