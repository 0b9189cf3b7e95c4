//go:build e2e && soak

package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/shell"
	"github.com/runbot/runbot/store"
	"github.com/runbot/runbot/test/e2e/testhost"
)

// soakFixes is how many services the soak can break, each a host of its
// own, so that no lock, rate limit or circuit breaker of one holds back
// the next.
const soakFixes = 400

// TestReplicasSoak is the replica cluster of TestReplicasAcrossHosts
// under a steady load for RUNBOT_SOAK (30 minutes unless set): an alert
// for a healthy service every 3 s on a random replica, a service that
// breaks every 20 s and whose fix is approved on a random replica, and an
// audit scheduled every minute. Every 20-40 s one fault from the list
// strikes, at random: a replica's host loses power (back after 40 s),
// a replica is cut off from PostgreSQL or from the target for 40 s, or
// the primary loses power and the standby is promoted (the old primary's
// host comes back as the new standby). Then it checks: one finished run
// per accepted alert, no service restarted twice, no approved plan left
// unapplied, nothing running, and the audits.
//
// Run it with `make soak-cluster`; it is built only with the soak tag.
func TestReplicasSoak(t *testing.T) {
	length := 30 * time.Minute
	if v := os.Getenv("RUNBOT_SOAK"); v != "" {
		d, err := time.ParseDuration(v)
		require.NoError(t, err, "RUNBOT_SOAK")
		length = d
	}
	hosts := []string{"soak", "audit"}
	for i := range soakFixes {
		hosts = append(hosts, "fix-"+strconv.Itoa(i+1))
	}
	rc := newReplicaCluster(t, `    - match: {alertname: ClusterSoak}
      runbook: cluster-app
      params: {svc: soak, host: soak}
schedules:
  - {runbook: cluster-app, cron: '* * * * *', timezone: UTC, post: on_change, params: {svc: audit, host: audit}}
`, hosts...)
	rc.target.Run(t, "echo ok > /run/cluster-app/soak.state; echo ok > /run/cluster-app/audit.state")

	start := time.Now()
	end := start.Add(length)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		accepted []string // the soak alerts' keys a replica took
		refused  int      // deliveries refused or unanswered, retried
		fixes    []string // the services broken, in order
		// unplanned are the fixes' runs that ended without a plan (cut
		// off from the target) and were followed by a new alert; recast
		// are the votes a replica answered but could not record, told
		// the voter so, and that were cast again.
		unplanned, recast int
		errs              []error
	)
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}

	// Alerts for the healthy service, each a new one (its own
	// fingerprint), retried round the replicas until one takes it.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := 0; time.Now().Before(end); n++ {
			key := fmt.Sprintf("soak-%d", n)
			first := rand.IntN(len(rc.replicas))
			for try := 0; ; try++ {
				status, err := rc.deliverKey(rc.replicas[(first+try)%len(rc.replicas)], "ClusterSoak", "soak", key)
				if err != nil {
					fail(err)
					return
				}
				if status == http.StatusOK {
					mu.Lock()
					accepted = append(accepted, key)
					mu.Unlock()
					break
				}
				mu.Lock()
				refused++
				mu.Unlock()
				if try > 180 {
					fail(fmt.Errorf("no replica took alert %s in 3 minutes", key))
					return
				}
				time.Sleep(time.Second)
			}
			time.Sleep(3 * time.Second)
		}
	}()

	// A service breaks every 20 s; its plan is approved on a random
	// replica once posted.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 1; time.Now().Before(end) && i <= soakFixes; i++ {
			svc := "fix-" + strconv.Itoa(i)
			st, err := rc.soakFix(svc)
			mu.Lock()
			fixes = append(fixes, svc)
			unplanned += st.unplanned
			recast += st.recast
			mu.Unlock()
			if err != nil {
				fail(err)
				return
			}
			time.Sleep(20 * time.Second)
		}
	}()

	// Faults, one at a time, from the test's goroutine (they use the
	// test hosts' helpers, which may fail the test).
	faults := map[string]int{}
	struck := 0
	for time.Now().Add(2 * time.Minute).Before(end) {
		time.Sleep(time.Duration(20+rand.IntN(21)) * time.Second)
		kind := []string{"power-cut", "cut-from-postgres", "cut-from-target", "primary-lost"}[rand.IntN(4)]
		victim := rc.replicas[rand.IntN(len(rc.replicas))]
		if kind == "primary-lost" {
			victim = rc.primary
		}
		faults[kind]++
		struck++
		rc.c.Step(t, victim, "soak fault %d: %s", struck, kind)
		switch kind {
		case "power-cut":
			rc.c.PowerCut(t, victim)
			time.Sleep(40 * time.Second)
			rc.c.PowerOn(t, victim)
			rc.install(victim, "")
		case "cut-from-postgres":
			rc.c.Partition(t, victim, rc.primary)
			rc.c.Partition(t, victim, rc.standby)
			time.Sleep(40 * time.Second)
			rc.c.Heal(t, victim, rc.primary)
			rc.c.Heal(t, victim, rc.standby)
		case "cut-from-target":
			rc.c.Partition(t, victim, rc.target)
			time.Sleep(40 * time.Second)
			rc.c.Heal(t, victim, rc.target)
		case "primary-lost":
			rc.failOver()
		}
	}
	wg.Wait()
	require.Empty(t, errs)

	rc.c.Step(t, nil, "soak over: checking what it left")
	rc.reopenStore()
	rc.nothingRunning()
	mu.Lock()
	defer mu.Unlock()

	// One finished run per accepted alert, and none for an alert no
	// replica took: runs of the healthy service, minus the audits' (they
	// run on svc audit), minus the re-runs of a run a fault cut short.
	runs := rc.runsOf("cluster-app", "soak")
	finished, interrupted := 0, 0
	for _, r := range runs {
		switch r.Status {
		case store.RunFinished:
			finished++
		case store.RunInterrupted:
			interrupted++
		}
	}
	require.Equal(t, len(accepted), finished, "one finished run per accepted alert (%d interrupted runs were run again)", interrupted)

	// No service restarted twice: the target's journal has one restart
	// per plan whose restart began, and each fix's plan is done, or ended
	// by a fault after at most its one restart.
	restarts := rc.restarts()
	began, done, expired := 0, 0, 0
	var states []string
	for _, svc := range fixes {
		plans := rc.plansOf(svc)
		require.NotEmpty(t, plans, "%s's run proposed a plan", svc)
		for _, p := range plans {
			acts := rc.actions(p.ID)
			require.LessOrEqual(t, len(acts), 2, "plan %s acted at most once per action", p.ID)
			if len(acts) > 0 {
				began++
			}
			switch p.State {
			case store.PlanDone:
				done++
			case store.PlanExpired:
				// Every vote was counted or cast again, so a plan that
				// expired lost its vote, or an approval nobody applied.
				expired++
			}
			require.NotEqual(t, store.PlanApproved, p.State, "plan %s was approved and never applied", p.ID)
			states = append(states, string(p.State))
		}
	}
	require.Equal(t, began, restarts, "one restart of cluster-app per plan that began its actions")

	audits := rc.runsOf("cluster-app", "audit")
	minutes := int(time.Since(start).Minutes())
	t.Logf("FIGURE soak of %s: faults %v; %d alerts accepted (%d deliveries refused or unanswered and retried), %d finished runs, %d interrupted runs run again; %d services broken, %d of their runs without a plan (alerted again), %d votes not recorded and cast again, %d plans began, %d done, %d expired, %d restarts; %d audit runs in %d minutes",
		time.Since(start).Round(time.Second), faults, len(accepted), refused, finished, interrupted, len(fixes), unplanned, recast, began, done, expired, restarts, len(audits), minutes)
	require.GreaterOrEqual(t, len(audits), minutes-2, "an audit about every minute, faults or not")
	t.Logf("plan states: %s", strings.Join(states, " "))
	require.Zero(t, expired, "no plan of a broken service expired: its vote was counted and it was applied")
}

// fixStats counts what one broken service took to be fixed.
type fixStats struct {
	// unplanned are its runs that ended without a plan.
	unplanned int
	// recast are its votes that were not recorded and were cast again.
	recast int
}

// soakFix breaks svc, alerts on it, waits for the posted plan of its run
// and approves it on a random replica; errors instead of failing, for a
// goroutine. A run that ended without a plan (its replica was cut off from
// the target: inconclusive, as it must be) is followed by a new alert, as
// the on-call would ask again.
func (rc *replicaCluster) soakFix(svc string) (fixStats, error) {
	var st fixStats
	r, err := rc.target.Exec(rc.t.Context(), "echo broken > /run/cluster-app/"+svc+".state")
	if err != nil {
		return st, fmt.Errorf("break %s: %w", svc, err)
	}
	if r.ExitCode != 0 {
		return st, fmt.Errorf("break %s: exit status %d: %s", svc, r.ExitCode, r.Stderr)
	}
	for alert := 0; alert < 3; alert++ {
		key := fmt.Sprintf("%s/%d", svc, alert)
		first := rand.IntN(len(rc.replicas))
		for try := 0; ; try++ {
			status, err := rc.deliverKey(rc.replicas[(first+try)%len(rc.replicas)], "ClusterApp", svc, key)
			if err != nil {
				return st, err
			}
			if status == http.StatusOK {
				break
			}
			if try > 180 {
				return st, fmt.Errorf("no replica took alert %s", key)
			}
			time.Sleep(time.Second)
		}
		voted, recast, err := rc.voteOnNewest(svc, alert+1)
		st.recast += recast
		if err != nil {
			return st, err
		}
		if voted {
			return st, nil
		}
		st.unplanned++
	}
	return st, fmt.Errorf("three alerts for %s and no plan", svc)
}

// voteOnNewest waits for the runs-th run of svc and approves its posted
// plan on a random replica; it reports false when the run ended without
// proposing one. A vote counts once the plan is no longer proposed. One
// the replica answered but could not record (the store was away) is cast
// again once the voter is told so, as a person would; recast says how
// many were. A vote neither counted nor told the voter in two minutes is
// lost, and an error.
func (rc *replicaCluster) voteOnNewest(svc string, runs int) (voted bool, recast int, _ error) {
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		all, err := rc.runsOfErr("cluster-app", svc)
		if err == nil && len(all) >= runs {
			run := all[len(all)-1]
			plans, err := rc.st.ListPlans(rc.t.Context(), store.PlanFilter{RunID: run.ID})
			switch {
			case err != nil:
			case len(plans) == 0 && run.Status.Final():
				return false, recast, nil
			case len(plans) > 0 && run.Message != nil:
				plan := plans[0]
				before := len(rc.told(plan.ID))
				status, err := rc.voteStatus(rc.replicas[rand.IntN(len(rc.replicas))], plan, run)
				if err != nil || status != http.StatusOK {
					break
				}
				counted, told, err := rc.voteCounted(plan.ID, before)
				switch {
				case err != nil:
					return false, recast, err
				case counted:
					return true, recast, nil
				case strings.Contains(told, "could not be recorded"):
					recast++
					deadline = time.Now().Add(3 * time.Minute)
					continue
				default:
					return false, recast, fmt.Errorf("the vote on plan %s was not counted; the voter was told %q; the replicas logged:\n%s", plan.ID, told, rc.planJournal(plan.ID))
				}
			}
		}
		time.Sleep(2 * time.Second)
	}
	return false, recast, fmt.Errorf("no posted plan for %s, or no replica took its vote, in 3 minutes", svc)
}

// voteCounted waits up to two minutes (a promotion, and the test's own
// view of the store following it) for a plan to leave proposed (the vote
// counted) or for a new word to its voter past the told-th: what it said.
func (rc *replicaCluster) voteCounted(planID string, told int) (counted bool, said string, _ error) {
	for end := time.Now().Add(2 * time.Minute); time.Now().Before(end); time.Sleep(time.Second) {
		p, err := rc.st.GetPlan(rc.t.Context(), planID)
		if err == nil && p.State != store.PlanProposed {
			return true, "", nil
		}
		if words := rc.told(planID); len(words) > told {
			return false, words[len(words)-1], nil
		}
	}
	return false, "", fmt.Errorf("a vote on plan %s was answered but neither counted nor refused to the voter in two minutes: lost; the replicas logged:\n%s", planID, rc.planJournal(planID))
}

// voteStatus is vote that returns the HTTP status (0: no answer) and its
// errors, for goroutines.
func (rc *replicaCluster) voteStatus(h *testhost.Host, plan store.Plan, run store.Run) (int, error) {
	return rc.voteAsStatus(h, rcApprover, plan, run)
}

// told is what the replicas told the voter of a plan, newest last: the
// private messages to the approver (chat.postEphemeral, which runbot tries
// first; the soak's votes come one at a time, so the ones after a vote are
// about it) and the posts to the click's response_url (see responseURL).
func (rc *replicaCluster) told(planID string) []string {
	var out []string
	for _, c := range rc.rec.Calls("response_url", "chat.postEphemeral") {
		if c.Form.Get("user") == rcApprover || strings.HasSuffix(c.Path, "/"+url.PathEscape("click-"+planID)) {
			out = append(out, c.Text())
		}
	}
	return out
}

// planJournal is what the replicas logged about a plan, for a failure.
func (rc *replicaCluster) planJournal(planID string) string {
	var b strings.Builder
	for _, h := range rc.replicas {
		r, err := h.Exec(context.Background(), "journalctl -u runbot --no-pager -o short-iso | grep -F "+shell.Quote(planID))
		if err == nil {
			fmt.Fprintf(&b, "%s:\n%s", h.Name, r.Stdout)
		}
	}
	return b.String()
}

// plansOf returns the plans of a service's runs.
func (rc *replicaCluster) plansOf(svc string) []store.Plan {
	rc.t.Helper()
	var out []store.Plan
	for _, r := range rc.runsOf("cluster-app", svc) {
		plans, err := rc.st.ListPlans(rc.t.Context(), store.PlanFilter{RunID: r.ID})
		require.NoError(rc.t, err)
		out = append(out, plans...)
	}
	return out
}

// failOver cuts the primary's power and promotes the standby, then boots
// the old primary's host again as the new standby, streaming from the new
// primary: the pair swaps roles.
func (rc *replicaCluster) failOver() {
	t := rc.t
	old := rc.primary
	rc.c.PowerCut(t, old)
	rc.standby.Run(t, "pg_ctlcluster 15 main promote")
	rc.primary, rc.standby = rc.standby, old
	rc.reopenStore()
	time.Sleep(20 * time.Second)
	rc.c.PowerOn(t, old)
	rc.startStandby()
	testhost.Eventually(t, time.Minute, "the new standby streams in synchronous replication", func() (bool, string) {
		out := rc.primary.Run(t, `sudo -u postgres psql -tAc "SELECT sync_state FROM pg_stat_replication WHERE application_name = 'standby'"`)
		return strings.TrimSpace(out) == "sync", out
	})
}
