package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/actions"
	"github.com/runbot/runbot/checks"
	"github.com/runbot/runbot/internal/sshdtest"
	"github.com/runbot/runbot/internal/step"
	"github.com/runbot/runbot/remote/sshrun"
	"github.com/runbot/runbot/runbooks/record"
	"github.com/runbot/runbot/store"
	"github.com/runbot/runbot/store/storetest"
)

// targetPartitionMargin is how long after a step's or an action's timeout
// a run cut off from its target may take to end: stopping the timed-out
// command (sshrun's stopTimeout, 5 s) and recording the end.
const targetPartitionMargin = 15 * time.Second

// newTargetPartitionRig starts one `runbot serve` replica on PostgreSQL
// whose inventory reaches the host "target" over real SSH (a real sshd,
// its host key pinned and verified) through a proxy the test can
// blackhole. The failover runbook's state and counter files are on the
// target: the sshd runs on this host.
func newTargetPartitionRig(t *testing.T) (*cluster, *cutProxy) {
	t.Helper()
	srv := sshdtest.Start(t, sshdtest.Options{})
	path := newCutProxy(t, "tcp", srv.Addr)
	host, port, err := net.SplitHostPort(path.addr)
	require.NoError(t, err)
	entry := fmt.Sprintf("{address: %s, port: %s, user: %s, identity_files: [%s], host_keys: [%q]}",
		host, port, srv.User, srv.ClientKeyFile, srv.HostPublicKey)
	c := newClusterFrom(t, clusterSpec{replicas: 1, inventory: map[string]string{"target": entry}, location: storetest.PostgresDatabase(t)})
	return c, path
}

// TestTargetPartitionedMidStep: the network path from a serve replica to
// its target drops every packet while a diagnostic step's command runs
// there over SSH (no FIN, no RST: the connection stays open and silent).
// The run must end within the step's timeout, with the step recorded as
// timed out or its connection lost on that host, never as a healthy
// verdict, proposing nothing and restarting nothing; once the path heals,
// a new run on the host works.
func TestTargetPartitionedMidStep(t *testing.T) {
	c, path := newTargetPartitionRig(t)
	r := c.replicas[0]
	// The step cats the state file: a FIFO nobody writes keeps it running.
	state := filepath.Join(c.dir, "target.state")
	require.NoError(t, syscall.Mkfifo(state, 0o644))
	reading := func() bool { return exec.Command("pgrep", "-f", "cat "+state).Run() == nil }
	require.Equal(t, http.StatusOK, c.alert(r, "target"))
	c.until("the step runs on the target", time.Minute, reading)

	cut := time.Now()
	path.blackhole()
	ct, ok := checks.Default.Lookup("command")
	require.True(t, ok)
	var run store.Run
	c.until("the run ends within the step's timeout", ct.Timeout+targetPartitionMargin, func() bool {
		runs := c.runsOf("target")
		if len(runs) == 1 && runs[0].Status.Final() {
			run = runs[0]
			return true
		}
		return false
	})
	ended := time.Since(cut)
	require.Equal(t, store.RunFinished, run.Status)
	require.NotEqual(t, store.OutcomeOK, run.Outcome, "a step that did not run is no healthy verdict")
	require.NotEqual(t, store.OutcomeCritical, run.Outcome, "nor a diagnosis")
	rep, err := record.ReportOf(run)
	require.NoError(t, err)
	require.Len(t, rep.Steps, 1)
	st := rep.Steps[0]
	require.Contains(t, []step.Status{step.Timeout, step.Error}, st.Status, "the step: %+v", st)
	require.Contains(t, st.Error, "target", "the error names the host")
	plans, err := c.st.ListPlans(t.Context(), store.PlanFilter{RunID: run.ID})
	require.NoError(t, err)
	require.Empty(t, plans, "nothing is proposed from a step that did not run")
	require.Zero(t, c.restarts("target"))

	path.heal()
	healed := time.Now()
	// The step's command still waits on the target: its session's end
	// reaches sshd only now, and a cat opening a FIFO hears no hangup.
	releaseFIFO(t, state, os.O_WRONLY)
	c.until("the step's command ends on the target", time.Minute, func() bool { return !reading() })
	require.NoError(t, os.Remove(state))

	c.runAfterHeal(t, r)
	t.Logf("cut at 0s: the run ended at %s (step timeout %s, SSH keepalive %s), outcome %s, step %s: %s; after the heal a new run reached the host in %s",
		ended.Round(time.Millisecond), ct.Timeout, sshrun.DefaultKeepAlive, run.Outcome, st.Status, st.Error, time.Since(healed).Round(time.Millisecond))
}

// TestTargetPartitionedMidApply: the network path from a serve replica to
// its target drops every packet while the replica applies an approved
// restart there over SSH (the restart blocked before its end). The apply
// must end within the action's timeout with the plan failed (never done,
// never verified), its action recorded as failed, nothing left running;
// the restart is not run again, not after the heal either (a new approval
// is needed); and once the path heals a new run on the host works. The
// restarts are counted on the target.
func TestTargetPartitionedMidApply(t *testing.T) {
	c, path := newTargetPartitionRig(t)
	r := c.replicas[0]
	c.setState("target", "broken")
	require.Equal(t, http.StatusOK, c.alert(r, "target"))
	plan, run := c.proposed("target")
	c.click(r, plan, run)
	c.until("the restart started", time.Minute, func() bool { return c.restarts("target") == 1 })
	acting := c.blockRestart("target")
	c.until("the restart blocks on the state file", time.Minute, func() bool {
		return acting() && c.plan(plan.ID).State == store.PlanApplying
	})

	cut := time.Now()
	path.blackhole()
	// The failover runbook gives its restart a minute.
	const actionTimeout = time.Minute
	at, ok := actions.Default.Lookup("command")
	require.True(t, ok)
	var ended store.Plan
	c.until("the apply ends within the action's timeout", actionTimeout+targetPartitionMargin, func() bool {
		ended = c.plan(plan.ID)
		return ended.State.Final()
	})
	took := time.Since(cut)
	require.Equal(t, store.PlanFailed, ended.State, "a restart whose end nobody saw is not a success")
	acts, err := c.st.Actions(t.Context(), plan.ID)
	require.NoError(t, err)
	require.Len(t, acts, 1)
	require.Equal(t, store.ActionFailed, acts[0].State, "the action is recorded as failed, not left started")
	// Its record says the outcome is unknown (the connection went while
	// the restart ran), not that the restart did not happen.
	require.Contains(t, string(acts[0].Detail), sshrun.ErrConnectionLost.Error(), "the action's record: %s", acts[0].Detail)
	running, err := c.st.ListRuns(t.Context(), store.RunFilter{Status: store.RunRunning})
	require.NoError(t, err)
	require.Empty(t, running, "nothing is left running")
	events, err := c.st.Audit(t.Context(), store.AuditFilter{PlanID: plan.ID, Kind: store.AuditPlanState})
	require.NoError(t, err)
	require.NotEmpty(t, events)
	outcome := events[len(events)-1].Detail
	require.Contains(t, string(outcome), "whether it took effect on the target is NOT KNOWN",
		"the plan's message says the restart may have happened, not that it failed: %s", outcome)
	require.Contains(t, string(acts[0].Detail), `"outcome_unknown":true`)

	path.heal()
	healed := time.Now()
	// The restart's last write still waits on the target for a reader.
	state := filepath.Join(c.dir, "target.state")
	releaseFIFO(t, state, os.O_RDONLY)
	c.until("the restart's command ends on the target", time.Minute, func() bool { return !acting() })
	require.NoError(t, os.Remove(state))
	c.setState("target", "ok")
	// Two sweeps after the heal: nothing applies the plan again.
	time.Sleep(2 * store.DefaultRecoveryInterval)
	require.Equal(t, 1, c.restarts("target"), "the restart ran once")
	require.Equal(t, store.PlanFailed, c.plan(plan.ID).State, "the plan stays failed: a new approval is needed")
	acts, err = c.st.Actions(t.Context(), plan.ID)
	require.NoError(t, err)
	require.Len(t, acts, 1, "no second action")

	asked := time.Now()
	c.runAfterHeal(t, r)
	t.Logf("cut at 0s: the apply ended at %s (action timeout %s, the command action's default %s, SSH keepalive %s): plan %s: %s; action %s: %s; restarts on the target: %d; %s after the heal a new run reached the host in %s",
		took.Round(time.Millisecond), actionTimeout, at.Timeout, sshrun.DefaultKeepAlive, ended.State, outcome, acts[0].State, acts[0].Detail,
		c.restarts("target"), asked.Sub(healed).Round(time.Millisecond), time.Since(asked).Round(time.Millisecond))
}

// releaseFIFO opens the FIFO at path from the other side (flag) without
// waiting, so that a command on the target blocked opening it goes on, and
// closes it once that command has had its turn. A FIFO nobody waits on
// any more is left as it is.
func releaseFIFO(t *testing.T, path string, flag int) {
	t.Helper()
	f, err := os.OpenFile(path, flag|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ENXIO) {
		return // a writer finds no reader: nobody waits
	}
	require.NoError(t, err)
	if flag == os.O_WRONLY {
		_, err = f.WriteString("ok\n")
		require.NoError(t, err)
	}
	time.Sleep(time.Second)
	require.NoError(t, f.Close())
}

// runAfterHeal asks replica r for a run on the healed target and waits
// until it ends with every step run.
func (c *cluster) runAfterHeal(t *testing.T, r *replica) {
	t.Helper()
	c.setState("after", "ok")
	require.Equal(t, http.StatusOK, c.alertOn(r, "after", "target"))
	var after store.Run
	c.until("a new run on the healed host", time.Minute, func() bool {
		runs := c.runsOf("after")
		if len(runs) == 1 && runs[0].Status.Final() {
			after = runs[0]
			return true
		}
		return false
	})
	requireStepsRan(t, after)
}

// requireStepsRan checks that every step of a run ran on its host: the
// failover runbook has no diagnosis for a healthy service, so a run that
// reached a healthy one ends inconclusive (undiagnosed), not ok.
func requireStepsRan(t *testing.T, run store.Run) {
	t.Helper()
	require.Equal(t, store.RunFinished, run.Status)
	rep, err := record.ReportOf(run)
	require.NoError(t, err)
	require.NotEmpty(t, rep.Steps)
	for _, st := range rep.Steps {
		require.Equal(t, step.OK, st.Status, "step %s on %s: %s", st.Step, st.Host, st.Error)
	}
}
