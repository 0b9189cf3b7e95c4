//go:build e2e

package e2e

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/store"
	"github.com/runbot/runbot/test/e2e/testhost"
)

// recoveryGoal is how soon after a fault a survivor must have picked the
// work up: the replica lease is 30 s, and the goal is 30 s from
// the fault; a figure above it fails the goal, which the test reports,
// and above twice it the test fails.
const recoveryGoal = 30 * time.Second

// TestReplicasAcrossHosts runs three `runbot serve` replicas as systemd
// units on test hosts of their own, on a PostgreSQL primary with a
// synchronous streaming standby on two more hosts, against a target host
// reached over real SSH, at production defaults (lease, heartbeat, sweep,
// step timeouts), and strikes one fault at a time:
//
//   - the host of the replica applying a fix loses power after the
//     restart, before verify;
//   - the replica applying a fix is cut off from both PostgreSQL hosts;
//   - the replica running a diagnosis is cut off from the target mid-step;
//   - two replicas' clocks run 30 s fast and 30 s slow through a fix;
//   - the PostgreSQL primary's host loses power mid-storm and mid-apply,
//     and the standby is promoted;
//   - the incident: the target's SGLang PD deployment wedges, and the host
//     of the replica applying the incident runbook's fix loses power while
//     it verifies.
//
// Each counts the restarts in the target's journal, the runs per alert,
// the votes and the plans, and measures how soon the work was picked up.
func TestReplicasAcrossHosts(t *testing.T) {
	rc := newReplicaCluster(t, "")
	rc.powerCutMidApply()
	rc.cutFromPostgresMidApply()
	rc.cutFromTargetMidStep()
	rc.clockSkewThroughAFix()
	rc.primaryLostMidStormAndMidApply()
	rc.incidentPowerCutMidApply()
}

// recovered fails the test when a survivor took more than twice the goal,
// and says whether the goal was met.
func (rc *replicaCluster) recovered(what string, took time.Duration) {
	rc.t.Helper()
	verdict := "within"
	if took > recoveryGoal {
		verdict = "OVER"
	}
	rc.t.Logf("FIGURE %s: %.1f s (%s the %s goal)", what, took.Seconds(), verdict, recoveryGoal)
	require.Less(rc.t, took, 2*recoveryGoal, "%s", what)
}

// powerCutMidApply: the replica applying a fix loses power between the
// restart and the verify. A survivor ends the plan interrupted (whether
// the warm-up finished is not known to it), and nobody restarts the
// service again.
func (rc *replicaCluster) powerCutMidApply() {
	t := rc.t
	rc.c.Step(t, nil, "power cut: the host of the replica applying a fix loses power mid-apply")
	before := rc.restarts()
	plan, applier := rc.approvedAndWarming("cut", rc.replicas[0], rc.replicas[1])
	require.Equal(t, before+1, rc.restarts(), "the fix restarted cluster-app once before the cut")
	cut := time.Now()
	rc.c.PowerCut(t, applier)
	p, took := rc.settled(plan.ID, cut, 3*time.Minute)
	require.Equal(t, store.PlanInterrupted, p.State, "a survivor ends the plan of a replica that lost power")
	rc.survivorSays(applier, cut, "remediation was interrupted: the process applying it died", p.ID)
	rc.recovered("power cut of "+applier.Name+" mid-apply: plan interrupted by a survivor after", took)

	// sshd keeps running what a client that went silent started: the
	// warm-up ends on its own on the target. Nothing else happens.
	testhost.Eventually(t, time.Minute, "the warm-up ran to its end on the target", func() (bool, string) {
		out := rc.target.Run(t, "cat /run/cluster-app/cut.state")
		return out == "ok\n", out
	})
	rc.quietFor(plan.ID, before+1, 2, 20*time.Second)
	rc.nothingRunning()
	require.Len(t, rc.runsOf("cluster-app", "cut"), 1, "one run for the alert")

	rc.c.Step(t, applier, "the replica's host powers on again, runbot installed anew")
	rc.c.PowerOn(t, applier)
	rc.install(applier, "")
	rc.quietFor(plan.ID, before+1, 2, 10*time.Second)
}

// survivorSays checks that a replica other than gone logged, since a
// time, a line with text about the plan.
func (rc *replicaCluster) survivorSays(gone *testhost.Host, since time.Time, text, planID string) {
	rc.t.Helper()
	var saw []string
	for _, h := range rc.others(gone) {
		for _, line := range strings.Split(journalSince(rc.t, h, since.Add(-time.Second)), "\n") {
			if strings.Contains(line, text) && strings.Contains(line, planID) {
				return
			}
			saw = append(saw, h.Name+": "+line)
		}
	}
	rc.t.Fatalf("no survivor logged %q for plan %s; their journals:\n%s", text, planID, strings.Join(saw, "\n"))
}

// quietFor checks, for a while, that the target saw restarts restarts in
// all and that the plan has actions action records: nothing acts again.
func (rc *replicaCluster) quietFor(planID string, restarts, actions int, d time.Duration) {
	rc.t.Helper()
	state := rc.plan(planID).State
	for end := time.Now().Add(d); ; {
		require.Equal(rc.t, restarts, rc.restarts(), "cluster-app was restarted again")
		require.Len(rc.t, rc.actions(planID), actions, "no further action of plan %s", planID)
		require.Equal(rc.t, state, rc.plan(planID).State, "plan %s stays %s", planID, state)
		if time.Now().After(end) {
			return
		}
		time.Sleep(2 * time.Second)
	}
}

// cutFromPostgresMidApply: the replica applying a fix, holding the
// deployment lock and an SSH session to the target, is cut off from both
// PostgreSQL hosts. It must stop acting before its lease can be taken
// over (its warm-up is killed on the target before a survivor ends the
// plan), and must not resume when the partition heals.
func (rc *replicaCluster) cutFromPostgresMidApply() {
	t := rc.t
	rc.c.Step(t, nil, "partition: the replica applying a fix is cut off from PostgreSQL")
	before := rc.restarts()
	plan, applier := rc.approvedAndWarming("pgcut", rc.replicas[1], rc.replicas[2])
	require.Equal(t, before+1, rc.restarts())
	cut := time.Now()
	rc.c.Partition(t, applier, rc.primary)
	rc.c.Partition(t, applier, rc.standby)
	healed := false
	heal := func() {
		if !healed {
			rc.c.Heal(t, applier, rc.primary)
			rc.c.Heal(t, applier, rc.standby)
			healed = true
		}
	}
	defer heal()

	var stopped time.Duration
	testhost.Eventually(t, 2*time.Minute, "the cut-off replica stops its warm-up on the target", func() (bool, string) {
		// The pattern's brackets keep pgrep's own shell from matching.
		r := rc.target.Run(t, "pgrep -f '[p]gcut.warming' || true")
		stopped = time.Since(cut)
		return strings.TrimSpace(r) == "", r
	})
	p, took := rc.settled(plan.ID, cut, 3*time.Minute)
	require.Equal(t, store.PlanInterrupted, p.State)
	t.Logf("FIGURE cut from PostgreSQL: %s stopped its warm-up on the target %.1f s after the cut; a survivor interrupted the plan after %.1f s",
		applier.Name, stopped.Seconds(), took.Seconds())
	require.Less(t, stopped, took, "the cut-off replica stopped acting before its work was taken over")
	rc.recovered("cut of "+applier.Name+" from PostgreSQL mid-apply: plan interrupted by a survivor after", took)
	require.Equal(t, "broken\n", rc.target.Run(t, "cat /run/cluster-app/pgcut.state"), "the warm-up never finished")

	rc.c.Step(t, applier, "the partition heals: the replica comes back and does not resume")
	heal()
	rc.ready(applier)
	rc.quietFor(plan.ID, before+1, 2, 30*time.Second)
	require.Equal(t, "broken\n", rc.target.Run(t, "cat /run/cluster-app/pgcut.state"), "nothing resumed the warm-up")
	rc.nothingRunning()
}

// cutFromTargetMidStep: the replica running a diagnosis is cut off from
// the target while the step runs. The run ends inconclusive (no finding
// from a host that did not answer) within the step's timeout, and once
// the partition heals, runs reach the target again.
func (rc *replicaCluster) cutFromTargetMidStep() {
	t := rc.t
	rc.c.Step(t, nil, "partition: the replica running a diagnosis is cut off from the target mid-step")
	rc.setState("slow", "broken")
	rc.alert(rc.replicas[2], "ClusterSlow", "slow")
	var run store.Run
	testhost.Eventually(t, 2*time.Minute, "the slow step is running on the target", func() (bool, string) {
		runs := rc.runsOf("cluster-slow", "slow")
		if len(runs) == 0 || !rc.marker("slow", "checking") {
			return false, fmt.Sprint(len(runs), " run(s)")
		}
		run = runs[0]
		return true, ""
	})
	runner := rc.replicaOf(run.Owner)
	cut := time.Now()
	rc.c.Partition(t, runner, rc.target)
	var took time.Duration
	testhost.Eventually(t, 3*time.Minute, "the run ends", func() (bool, string) {
		runs := rc.runsOf("cluster-slow", "slow")
		run = runs[len(runs)-1]
		took = time.Since(cut)
		return run.Status != store.RunRunning, string(run.Status)
	})
	rc.c.Heal(t, runner, rc.target)
	t.Logf("FIGURE cut of %s from the target mid-step: run %s %s (%s) %.1f s after the cut", runner.Name, run.ID, run.Status, run.Outcome, took.Seconds())
	require.Equal(t, store.RunFinished, run.Status)
	require.Equal(t, store.OutcomeInconclusive, run.Outcome, "a target that did not answer is no finding, and no all-clear")
	require.Less(t, took, 2*time.Minute, "the step's timeout bounds the wait")
	require.Len(t, rc.runsOf("cluster-slow", "slow"), 1, "one run for the alert")

	rc.c.Step(t, runner, "healed: a new alert's run reaches the target")
	rc.setState("slow2", "broken")
	rc.alert(runner, "ClusterSlow", "slow2")
	testhost.Eventually(t, 2*time.Minute, "the new run finds the service broken", func() (bool, string) {
		runs := rc.runsOf("cluster-slow", "slow2")
		if len(runs) == 0 {
			return false, "no run"
		}
		return runs[0].Outcome == store.OutcomeCritical, string(runs[0].Status) + " " + string(runs[0].Outcome)
	})
	rc.nothingRunning()
}

// clockSkewThroughAFix: th3 runs 30 s fast and th4 30 s slow (the test
// hook RUNBOT_TEST_CLOCK_OFFSET), as long as the lease. The alert lands on
// the fast one and the vote on the slow one. Judged by its own clock the
// fast replica would take any other's 30 s lease for lapsed and the slow
// one would see its own lease hold 30 s too long; judged by the
// database's, the fix runs once to the end.
func (rc *replicaCluster) clockSkewThroughAFix() {
	t := rc.t
	fast, slow := rc.replicas[1], rc.replicas[2]
	rc.c.Step(t, nil, "clock skew: %s runs 30 s fast, %s 30 s slow", fast.Name, slow.Name)
	since := time.Now()
	rc.install(fast, "30s")
	rc.install(slow, "-30s")
	require.Contains(t, journalSince(t, fast, since), "host clock is shifted by 30s")
	require.Contains(t, journalSince(t, slow, since), "host clock is shifted by -30s")
	before := rc.restarts()
	plan, applier := rc.approvedAndWarming("skew", fast, slow)
	p, took := rc.settled(plan.ID, time.Now(), 2*time.Minute)
	t.Logf("FIGURE clock skew: plan %s applied by %s ended %s %.1f s after its warm-up began", p.ID, applier.Name, p.State, took.Seconds())
	require.Equal(t, store.PlanDone, p.State, "no replica judged a lease lapsed by its own clock")
	require.Equal(t, before+1, rc.restarts())
	acts := rc.actions(plan.ID)
	require.Len(t, acts, 2)
	for _, a := range acts {
		require.Equal(t, store.ActionDone, a.State, "action %d", a.Index)
	}
	rc.nothingRunning()
	rc.c.Step(t, nil, "the clocks are right again")
	rc.install(fast, "")
	rc.install(slow, "")
}

// primaryLostMidStormAndMidApply: while a fix warms up and a storm of
// alerts for healthy services lands on every replica, the PostgreSQL
// primary's host loses power and the standby is promoted. Every alert a
// replica accepted gets its run, the fix is not applied twice, and
// nothing is left running.
func (rc *replicaCluster) primaryLostMidStormAndMidApply() {
	t := rc.t
	rc.c.Step(t, nil, "failover: the PostgreSQL primary loses power mid-storm and mid-apply; the standby is promoted")
	var storm []string
	var states strings.Builder
	for i := range rcStormSize {
		svc := fmt.Sprintf("storm-%d", i+1)
		storm = append(storm, svc)
		fmt.Fprintf(&states, "echo ok > /run/cluster-app/%s.state; ", svc)
	}
	rc.target.Run(t, states.String())
	before := rc.restarts()
	plan, applier := rc.approvedAndWarming("promo", rc.replicas[0], rc.replicas[2])

	type delivery struct {
		svc      string
		refused  int
		accepted time.Duration
		err      error
	}
	start := time.Now()
	results := make(chan delivery, len(storm))
	var wg sync.WaitGroup
	for i, svc := range storm {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Spread over 6 s, each to a replica at random, retried
			// round the replicas until one accepts, as Alertmanager does.
			time.Sleep(time.Duration(i) * 200 * time.Millisecond)
			d := delivery{svc: svc}
			first := rand.IntN(len(rc.replicas))
			for n := 0; ; n++ {
				status, err := rc.deliver(rc.replicas[(first+n)%len(rc.replicas)], "ClusterApp", svc)
				if err != nil || status == http.StatusOK {
					d.err, d.accepted = err, time.Since(start)
					break
				}
				d.refused++
				if time.Since(start) > 3*time.Minute {
					d.err = fmt.Errorf("no replica accepted the alert for %s in 3 minutes (last status %d)", svc, status)
					break
				}
				time.Sleep(time.Second)
			}
			results <- d
		}()
	}
	time.Sleep(2 * time.Second)
	cut := time.Now()
	rc.c.PowerCut(t, rc.primary)
	rc.standby.Run(t, "pg_ctlcluster 15 main promote")
	promoted := time.Since(cut)
	// The test's own view of the store starts afresh on the new primary:
	// its pooled connections to the old one would each wait out a query
	// timeout first.
	rc.reopenStore()
	wg.Wait()
	close(results)
	refused := 0
	var lastAccepted time.Duration
	for d := range results {
		require.NoError(t, d.err)
		refused += d.refused
		lastAccepted = max(lastAccepted, d.accepted)
	}
	t.Logf("FIGURE primary lost: standby promoted %.1f s after the cut; %d storm alerts accepted (%d deliveries refused or unanswered and retried), the last %.1f s after the storm began",
		promoted.Seconds(), len(storm), refused, lastAccepted.Seconds())

	rc.c.Step(t, nil, "every accepted alert has its finished run; the fix was not applied twice")
	reruns := 0
	testhost.Eventually(t, 3*time.Minute, "one finished run per storm alert", func() (bool, string) {
		reruns = 0
		var missing []string
		for _, svc := range storm {
			runs := rc.runsOf("cluster-app", svc)
			finished := 0
			for _, r := range runs {
				if r.Status == store.RunFinished {
					finished++
				}
			}
			if finished != 1 {
				missing = append(missing, fmt.Sprintf("%s: %d finished of %d", svc, finished, len(runs)))
			}
			reruns += len(runs) - 1
		}
		return len(missing) == 0, strings.Join(missing, "\n")
	})
	for _, svc := range storm {
		for _, r := range rc.runsOf("cluster-app", svc) {
			if r.Status == store.RunFinished {
				require.Equal(t, store.OutcomeOK, r.Outcome, "%s is healthy", svc)
			}
		}
	}
	p, took := rc.settled(plan.ID, cut, 3*time.Minute)
	t.Logf("FIGURE primary lost mid-apply: plan %s (applied by %s) ended %s %.1f s after the cut; %d storm run(s) run again after an interruption",
		p.ID, applier.Name, p.State, took.Seconds(), reruns)
	// Done; or interrupted by a survivor, or failed as not known by its
	// own replica, when the failover stopped its lease renewals long
	// enough for the fence: never applied twice, whichever.
	require.Contains(t, []store.PlanState{store.PlanDone, store.PlanInterrupted, store.PlanFailed}, p.State)
	require.Equal(t, before+1, rc.restarts(), "one restart for the fix, whatever the database did")
	require.LessOrEqual(t, len(rc.actions(plan.ID)), 2)
	rc.nothingRunning()

	// Every finished run was posted, in a message of its own, and no
	// message twice.
	posting := time.Now()
	testhost.Eventually(t, 2*time.Minute, "every finished storm run is posted", func() (bool, string) {
		var unposted []string
		for _, svc := range storm {
			for _, r := range rc.runsOf("cluster-app", svc) {
				if r.Status == store.RunFinished && r.Message == nil {
					unposted = append(unposted, svc)
				}
			}
		}
		return len(unposted) == 0, strings.Join(unposted, " ")
	})
	t.Logf("FIGURE primary lost: every storm run posted %.1f s after the plan settled", time.Since(posting).Seconds())
	all, err := rc.st.ListRuns(t.Context(), store.RunFilter{Limit: 10000})
	require.NoError(t, err)
	postedRuns := 0
	for _, r := range all {
		if r.Message != nil {
			postedRuns++
		}
	}
	posts := 0
	for _, call := range rc.rec.Calls("chat.postMessage") {
		if call.Status == http.StatusOK {
			posts++
		}
	}
	t.Logf("FIGURE chat: %d runs posted, %d chat.postMessage calls in the whole test", postedRuns, posts)
	// Every run here came from an alert: the alert's message, and the
	// run's reply in its thread.
	require.Equal(t, 2*postedRuns, posts, "two posts per alert's run, none twice")
}
