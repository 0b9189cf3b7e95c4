//go:build soak

package main

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/store"
	"github.com/runbot/runbot/store/storetest"
)

// soakEnv sets how long TestSoak runs (a Go duration), 30 minutes when
// unset. The soak is built only with the soak tag (`make soak`), so that
// `make test` neither runs nor skips it.
const (
	soakEnv     = "RUNBOT_SOAK"
	soakDefault = 30 * time.Minute
)

// soakIncidentEvery is how often a service breaks during the soak, and
// soakAlertEvery how often an alert for a healthy one arrives.
const (
	soakIncidentEvery = 20 * time.Second
	soakAlertEvery    = 3 * time.Second
	// soakFaultFor is how long a freeze or a cut from PostgreSQL lasts:
	// longer than the lease, so that the survivors take over.
	soakFaultFor = 40 * time.Second
)

// TestSoak: three `runbot serve` replicas on one PostgreSQL database, each
// through a proxy of its own, at production lease, heartbeat and sweep
// intervals, under a steady load (an alert for a healthy service every
// 3 s, a service that breaks every 20 s and whose proposed restart is
// approved from a replica at random, an audit scheduled every minute),
// while faults from issue 37's list hit one replica at a time, at random:
// SIGKILL (then a restart), a freeze (SIGSTOP of its process tree, then
// SIGCONT), a cut from PostgreSQL (its proxy drops every byte, then
// heals). Alerts and votes go to a replica that is not being hit, and
// are delivered again to another while refused, as a load balancer in
// front of Alertmanager's webhook does.
//
// At the end, after the faults have healed and the sweeps have settled:
// every accepted alert has exactly one run, finished; no service was
// restarted twice; no plan is left approved (a vote lost) or applying;
// nothing is left running; no minute has two audit runs. The figures
// (faults, refusals, time from an alert to its run) are logged.
func TestSoak(t *testing.T) {
	length := soakDefault
	if v := os.Getenv(soakEnv); v != "" {
		var err error
		length, err = time.ParseDuration(v)
		require.NoError(t, err, "%s=%q", soakEnv, v)
	}

	dsn := storetest.PostgresDatabase(t)
	const replicas = 3
	proxies := make([]*cutProxy, replicas)
	locations := make([]string, replicas)
	for i := range replicas {
		locations[i], proxies[i] = proxiedPostgres(t, dsn)
	}
	incidents := int(length/soakIncidentEvery) + 10
	healthy := int(length/soakAlertEvery) + 10
	var hosts []string
	for i := range incidents {
		hosts = append(hosts, fmt.Sprintf("inc-%d", i))
	}
	for i := range 10 {
		hosts = append(hosts, fmt.Sprintf("ok-%d", i))
	}
	hosts = append(hosts, "audit")
	// The audit reads its state file from a directory of its own, so that
	// it stays healthy whatever the test writes beside the services'.
	auditDir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(auditDir, "audit.state"), []byte("ok\n"), 0o644))
	s := &soak{t: t, proxies: proxies, accepted: map[string]time.Time{}, voted: map[string]bool{}, hit: map[int]bool{}}
	s.c = newClusterFrom(t, clusterSpec{replicas: replicas, hosts: hosts, location: dsn, replicaLocations: locations,
		extra: "schedules:\n  - {runbook: failover, cron: '* * * * *', timezone: UTC, post: on_change, params: {svc: audit, host: audit, dir: '" +
			auditDir + "'}}\n"})
	c := s.c

	start := time.Now()
	end := start.Add(length)
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; i < healthy && time.Now().Before(end); i++ {
			svc := fmt.Sprintf("alert-%d", i)
			c.setState(svc, "ok")
			wg.Go(func() { s.deliver(svc, fmt.Sprintf("ok-%d", i%10)) })
			time.Sleep(soakAlertEvery)
		}
	})
	wg.Go(func() {
		for i := 0; i < incidents && time.Now().Before(end); i++ {
			svc := fmt.Sprintf("inc-%d", i)
			c.setState(svc, "broken")
			wg.Go(func() {
				s.deliver(svc, svc)
				s.approve(svc, end.Add(2*time.Minute))
			})
			time.Sleep(soakIncidentEvery)
		}
	})
	faults := s.faults(end)
	wg.Wait()
	t.Logf("soak of %s: %d faults (%v); %d alerts accepted, %d deliveries refused and delivered again; %d votes",
		length, len(faults), faultCounts(faults), len(s.accepted), s.refused.Load(), len(s.voted))

	// Two sweeps of every replica after the last fault healed.
	time.Sleep(2 * store.DefaultRecoveryInterval)
	c.until("every accepted alert's run ends", 5*time.Minute, func() bool {
		for svc := range s.accepted {
			runs := c.runsOf(svc)
			if len(runs) == 0 || !runs[len(runs)-1].Status.Final() {
				return false
			}
		}
		return true
	})
	c.until("no plan applying or verifying", 5*time.Minute, func() bool {
		plans, err := c.st.ListPlans(t.Context(), store.PlanFilter{States: []store.PlanState{store.PlanApproved, store.PlanApplying, store.PlanVerifying}})
		require.NoError(t, err)
		return len(plans) == 0
	})

	var latencies []time.Duration
	rerun := 0
	for svc, at := range s.accepted {
		// One run finished per accepted alert. A run whose replica died,
		// froze or lost the database past its lease is ended interrupted
		// by a survivor, which runs the alert again: that is a diagnosis
		// repeated, never a remediation (counted below).
		runs := c.runsOf(svc)
		finished := 0
		for _, r := range runs {
			switch r.Status {
			case store.RunFinished:
				finished++
			case store.RunInterrupted:
				rerun++
			default:
				t.Errorf("%s: run %s ended %s", svc, r.ID, r.Status)
			}
		}
		require.Equal(t, 1, finished, "%s: one finished run per accepted alert, across kills, freezes and cuts: %v", svc, runs)
		latencies = append(latencies, max(runs[0].StartedAt.Sub(at), 0))
		require.LessOrEqual(t, c.restarts(svc), 1, "%s: never restarted twice", svc)
	}
	for i := range incidents {
		svc := fmt.Sprintf("inc-%d", i)
		require.LessOrEqual(t, c.restarts(svc), 1, "%s: never restarted twice", svc)
	}
	for planID := range s.voted {
		p := c.plan(planID)
		require.NotEqual(t, store.PlanProposed, p.State, "plan %s: the accepted vote was not lost", planID)
		acts, err := c.st.Actions(t.Context(), planID)
		require.NoError(t, err)
		require.LessOrEqual(t, len(acts), 1, "plan %s: its one action ran at most once", planID)
	}
	running, err := c.st.ListRuns(t.Context(), store.RunFilter{Status: store.RunRunning})
	require.NoError(t, err)
	require.Empty(t, running, "nothing is left running")

	audits := c.runsOf("audit")
	minutes := map[string]int{}
	for _, r := range audits {
		minutes[r.StartedAt.UTC().Format("15:04")]++
	}
	for m, n := range minutes {
		require.Equal(t, 1, n, "the audit of %s ran once across the replicas", m)
	}
	slices.Sort(latencies)
	t.Logf("alert to run start: median %s, p99 %s, max %s; %d runs interrupted by a fault and run again; %d audit runs in %d minutes; %d plans voted on, states: %v",
		pct(latencies, 50).Round(time.Millisecond), pct(latencies, 99).Round(time.Millisecond), pct(latencies, 100).Round(time.Millisecond),
		rerun, len(audits), int(time.Since(start).Minutes()), len(s.voted), s.planStates())
}

// soak is TestSoak's state, shared by its load and fault goroutines.
type soak struct {
	t       *testing.T
	c       *cluster
	proxies []*cutProxy
	refused atomic.Int64

	mu sync.Mutex
	// accepted is when each service's alert was taken; voted holds the
	// plans whose Approve click a replica took; hit, the replicas a fault
	// is hitting now.
	accepted map[string]time.Time
	voted    map[string]bool
	hit      map[int]bool
}

// healthy returns a replica no fault is hitting now.
func (s *soak) healthy() *replica {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ok []int
	for i := range s.c.replicas {
		if !s.hit[i] {
			ok = append(ok, i)
		}
	}
	return s.c.replicas[ok[rand.IntN(len(ok))]]
}

// deliver posts svc's alert to healthy replicas until one takes it.
func (s *soak) deliver(svc, host string) {
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		status, err := s.c.deliver(s.healthy(), svc, host)
		if err != nil {
			s.t.Errorf("deliver the alert of %s: %v", svc, err)
			return
		}
		if status == http.StatusOK {
			s.mu.Lock()
			s.accepted[svc] = time.Now()
			s.mu.Unlock()
			return
		}
		s.refused.Add(1)
		time.Sleep(time.Second)
	}
	s.t.Errorf("the alert of %s was never accepted", svc)
}

// approve waits for the plan svc's newest run proposes, then clicks
// Approve on healthy replicas until one takes the click. A run a fault
// interrupted is run again, and its plan is the one to vote on.
func (s *soak) approve(svc string, deadline time.Time) {
	read := false
	for time.Now().Before(deadline) {
		plan, run, ok := s.proposed(svc)
		if !ok {
			time.Sleep(time.Second)
			continue
		}
		if !read {
			// A person reads the message first.
			time.Sleep(time.Duration(rand.IntN(10)) * time.Second)
			read = true
		}
		status, err := s.c.vote(s.healthy(), plan, run)
		if err != nil {
			s.t.Errorf("vote on %s: %v", plan.ID, err)
			return
		}
		if status == http.StatusOK {
			s.mu.Lock()
			s.voted[plan.ID] = true
			s.mu.Unlock()
			return
		}
		s.refused.Add(1)
		time.Sleep(time.Second)
	}
	s.t.Errorf("%s: no vote was taken", svc)
}

// proposed is the plan waiting for votes that svc's newest posted run
// proposed.
func (s *soak) proposed(svc string) (store.Plan, store.Run, bool) {
	runs := s.c.runsOf(svc)
	for _, r := range slices.Backward(runs) {
		if r.Message == nil {
			continue
		}
		plans, err := s.c.st.ListPlans(s.t.Context(), store.PlanFilter{RunID: r.ID})
		if err == nil && len(plans) > 0 && plans[0].State == store.PlanProposed {
			return plans[0], r, true
		}
	}
	return store.Plan{}, store.Run{}, false
}

// faults hits one replica at a time until end, each fault followed by a
// quiet 20–40 s, and returns what it did.
func (s *soak) faults(end time.Time) []string {
	var done []string
	for time.Now().Add(soakFaultFor).Before(end) {
		time.Sleep(time.Duration(20+rand.IntN(20)) * time.Second)
		i := rand.IntN(len(s.c.replicas))
		r := s.c.replicas[i]
		s.mu.Lock()
		s.hit[i] = true
		s.mu.Unlock()
		kind := []string{"kill", "freeze", "cut"}[rand.IntN(3)]
		s.t.Logf("%s: %s %s", time.Now().Format("15:04:05"), kind, r.name)
		switch kind {
		case "kill":
			s.c.kill(r)
			time.Sleep(5 * time.Second)
			s.c.start(r)
		case "freeze":
			frozen := pauseTree(s.t, r.cmd.Process.Pid)
			time.Sleep(soakFaultFor)
			resumeTree(frozen)
		case "cut":
			s.proxies[i].blackhole()
			time.Sleep(soakFaultFor)
			s.proxies[i].heal()
		}
		s.c.until(r.name+" is ready again", 2*time.Minute, func() bool {
			code, _ := getReadyz(r.port)
			return code == http.StatusOK
		})
		s.mu.Lock()
		s.hit[i] = false
		s.mu.Unlock()
		done = append(done, kind)
	}
	return done
}

// planStates counts the voted plans by their state.
func (s *soak) planStates() map[store.PlanState]int {
	out := map[store.PlanState]int{}
	for id := range s.voted {
		out[s.c.plan(id).State]++
	}
	return out
}

// faultCounts counts faults by kind.
func faultCounts(faults []string) map[string]int {
	out := map[string]int{}
	for _, f := range faults {
		out[f]++
	}
	return out
}
