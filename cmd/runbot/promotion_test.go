package main

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/store"
	"github.com/runbot/runbot/store/storetest"
)

// TestPrimaryLostMidStormAndMidApply: three `runbot serve` replicas on a
// PostgreSQL primary with a synchronous streaming standby, reached with a
// multi-host URL asking for a read-write session. While one replica
// applies a restart and an alert storm is being delivered to all three,
// the primary's machine dies and the standby is promoted. Every alert
// still gets exactly one run (a delivery refused meanwhile is delivered
// again, as Alertmanager does), the restart happens once, and nothing is
// left running or applying.
func TestPrimaryLostMidStormAndMidApply(t *testing.T) {
	pair := storetest.PostgresPair(t)
	const fingerprints = 20
	hosts := []string{"victim"}
	for i := range fingerprints {
		hosts = append(hosts, fmt.Sprintf("storm-%d", i))
	}
	c := newClusterOn(t, 3, hosts, pair.DSN())

	c.setState("victim", "broken")
	require.Equal(t, http.StatusOK, c.alert(c.replicas[0], "victim"))
	plan, run := c.proposed("victim")
	c.click(c.replicas[1], plan, run)
	c.until("the restart started", time.Minute, func() bool { return c.restarts("victim") == 1 })

	// The storm: every alert to every replica twice, each delivery
	// repeated until a replica takes it.
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		refused int
	)
	for i := range fingerprints {
		svc := fmt.Sprintf("storm-%d", i)
		c.setState(svc, "ok")
		for _, r := range c.replicas {
			for range 2 {
				wg.Go(func() {
					deadline := time.Now().Add(2 * time.Minute)
					for c.alert(r, svc) != http.StatusOK {
						mu.Lock()
						refused++
						mu.Unlock()
						if time.Now().After(deadline) {
							t.Errorf("%s: a delivery to %s was never accepted", svc, r.name)
							return
						}
						time.Sleep(50 * time.Millisecond)
					}
				})
			}
		}
	}
	killed := time.Now()
	require.NoError(t, pair.KillPrimary())
	require.NoError(t, pair.Promote())
	promoted := time.Since(killed)
	wg.Wait()
	// The test's own reader is a client too: its pooled connections to the
	// dead primary fail once each before it reaches the new one.
	c.until("the test's reader reaches the promoted standby", time.Minute, func() bool {
		_, err := c.st.ListRuns(t.Context(), store.RunFilter{Limit: 1})
		return err == nil
	})

	for i := range fingerprints {
		svc := fmt.Sprintf("storm-%d", i)
		c.until("the run of "+svc, 2*time.Minute, func() bool {
			runs := c.runsOf(svc)
			return len(runs) > 0 && runs[0].Status.Final()
		})
	}
	c.until("the restart's plan ends", 2*time.Minute, func() bool {
		switch c.plan(plan.ID).State {
		case store.PlanApproved, store.PlanApplying, store.PlanVerifying:
			return false
		}
		return true
	})
	// Deliveries after the runs ended fold into them too; sweeps settle.
	time.Sleep(2 * store.DefaultRecoveryInterval)
	for i := range fingerprints {
		svc := fmt.Sprintf("storm-%d", i)
		runs := c.runsOf(svc)
		require.Len(t, runs, 1, "%s: one run per fingerprint across the replicas and the promotion", svc)
		require.Equal(t, store.RunFinished, runs[0].Status, svc)
	}
	require.Equal(t, 1, c.restarts("victim"), "the restart ran once")
	end := c.plan(plan.ID)
	running, err := c.st.ListRuns(t.Context(), store.RunFilter{Status: store.RunRunning})
	require.NoError(t, err)
	require.Empty(t, running, "nothing is left running")
	t.Logf("primary killed and standby promoted in %s, mid-storm (%d deliveries refused meanwhile and delivered again) and mid-restart; the plan ended %s",
		promoted.Round(time.Millisecond), refused, end.State)
}
