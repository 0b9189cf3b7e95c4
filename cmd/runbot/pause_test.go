package main

import (
	"net/http"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/proctest"
	"github.com/runbot/runbot/store"
)

// TestReplicaPausedMidApply: two `runbot serve` replicas share one
// PostgreSQL database; replica-0's machine "powers off" while it applies a
// restart: the replica and every process under it are stopped with
// SIGSTOP, so that its connections to PostgreSQL stay open and silent (no
// FIN, no RST, as when a machine loses power or a VM is paused) and its
// restart blocks where it was. The survivor must take the plan over once
// the lease lapses (interrupted, nothing left running). Then the machine
// comes back (SIGCONT, a VM resumed after a long pause): the resumed
// replica must not act again (the restart ran once, the plan stays
// interrupted, a new approval is needed) and must rejoin (ready). Run at
// production lease, heartbeat and sweep intervals.
func TestReplicaPausedMidApply(t *testing.T) {
	c := newCluster(t, 2, []string{"paused"})
	applier, survivor := c.replicas[0], c.replicas[1]

	c.setState("paused", "broken")
	require.Equal(t, http.StatusOK, c.alert(survivor, "paused"))
	plan, run := c.proposed("paused")
	c.click(applier, plan, run)
	c.until("the restart started", time.Minute, func() bool { return c.restarts("paused") == 1 })
	acting := c.blockRestart("paused")
	c.until("the restart blocks on the state file", time.Minute, func() bool {
		return acting() && c.plan(plan.ID).State == store.PlanApplying
	})

	paused := time.Now()
	frozen := pauseTree(t, applier.cmd.Process.Pid)
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			resumeTree(frozen)
		}
	}
	// Before the cluster's cleanup, which stops the replicas with SIGTERM:
	// a stopped process would never take it.
	t.Cleanup(resume)
	require.Greater(t, len(frozen), 1, "the replica and its restart's processes are paused")

	var takeover time.Duration
	c.until("the survivor interrupts the plan", store.DefaultLeaseTTL+3*store.DefaultRecoveryInterval, func() bool {
		return c.plan(plan.ID).State == store.PlanInterrupted
	})
	takeover = time.Since(paused)
	running, err := c.st.ListRuns(t.Context(), store.RunFilter{Status: store.RunRunning})
	require.NoError(t, err)
	require.Empty(t, running, "nothing is left running")
	require.Equal(t, 1, c.restarts("paused"))
	// A long pause: the VM stays paused well past the takeover, as one
	// resumed after minutes would.
	time.Sleep(store.DefaultRecoveryInterval)

	resumedAt := time.Now()
	resume()
	var stopped, ready time.Duration
	c.until("the resumed replica stops its restart and answers ready", time.Minute, func() bool {
		if stopped == 0 && !acting() {
			stopped = time.Since(resumedAt)
		}
		if ready == 0 {
			if code, _ := getReadyz(applier.port); code == http.StatusOK {
				ready = time.Since(resumedAt)
			}
		}
		return stopped != 0 && ready != 0
	})
	// Two sweeps of each replica after the resume.
	time.Sleep(2 * store.DefaultRecoveryInterval)
	require.False(t, acting(), "nothing runs the restart again")
	require.Equal(t, 1, c.restarts("paused"), "the restart was not resumed or repeated")
	require.Equal(t, store.PlanInterrupted, c.plan(plan.ID).State, "the plan stays interrupted: a new approval is needed")
	actions, err := c.st.Actions(t.Context(), plan.ID)
	require.NoError(t, err)
	require.Len(t, actions, 1, "one action was started, never a second")
	running, err = c.st.ListRuns(t.Context(), store.RunFilter{Status: store.RunRunning})
	require.NoError(t, err)
	require.Empty(t, running, "nothing is left running")
	t.Logf("paused at 0s (%d processes): the survivor interrupted the plan at %s (lease %s, sweep every %s); resumed %s later: the restart stopped %s after the resume, ready again after %s; action %s",
		len(frozen), takeover.Round(time.Millisecond), store.DefaultLeaseTTL, store.DefaultRecoveryInterval,
		resumedAt.Sub(paused).Round(time.Millisecond), stopped.Round(time.Millisecond), ready.Round(time.Millisecond), actions[0].State)
}

// pauseTree stops pid and every process under it with SIGSTOP, parents
// before their children so that none starts a process unseen, and returns
// them in that order.
func pauseTree(t *testing.T, pid int) []int {
	t.Helper()
	var stopped []int
	for queue := []int{pid}; len(queue) > 0; {
		p := queue[0]
		queue = queue[1:]
		if slices.Contains(stopped, p) {
			continue
		}
		if err := syscall.Kill(p, syscall.SIGSTOP); err != nil {
			require.ErrorIs(t, err, syscall.ESRCH, "pause %d", p) // it ended meanwhile
			continue
		}
		stopped = append(stopped, p)
		queue = append(queue, proctest.Children(p)...)
	}
	return stopped
}

// resumeTree continues the processes pauseTree stopped, all at once as a
// resumed machine does.
func resumeTree(pids []int) {
	for _, p := range slices.Backward(pids) {
		_ = syscall.Kill(p, syscall.SIGCONT) // one that was killed meanwhile is gone
	}
}
