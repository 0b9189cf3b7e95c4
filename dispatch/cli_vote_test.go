package dispatch

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/store"
)

// Two replicas share a SQLite store; `runbot approve`, a third process,
// records votes in it and applies nothing. A vote that does not settle the
// plan starts nothing. The one that approves it is picked up by the next
// sweep at once (not after strandedAfter, as a click's is), and with both
// replicas sweeping at the same moment, and sweeping again while and after
// it runs, the plan is applied exactly once, as the CLI's approver.
func TestSweepAppliesAPlanApprovedFromTheCLIOnce(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "runbot.db")
	open := func(owner string) *store.SQLite {
		st, err := store.Open(ctx, path, store.WithOwner(owner))
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, st.Close()) })
		return st
	}
	sa, sb, scli := open("replica-a"), open("replica-b"), open("runbot-approve")
	// Each replica holds a lease, as serve's KeepAlive renews it, so that
	// neither takes the other's apply for a dead process's.
	for _, st := range []*store.SQLite{sa, sb} {
		_, err := st.Heartbeat(ctx, store.DefaultLeaseTTL)
		require.NoError(t, err)
	}
	a, b := replicaDispatcher(t, sa), replicaDispatcher(t, sb)
	dir := t.TempDir()
	_, err := a.Submit(ctx, Request{Runbook: "stuck-worker", Params: map[string]string{"host": "here", "dir": dir}, RequestedBy: requester, Source: store.TriggerChat})
	require.NoError(t, err)
	require.NoError(t, a.Idle(ctx))
	plans, err := sa.ListPlans(ctx, store.PlanFilter{States: []store.PlanState{store.PlanProposed}})
	require.NoError(t, err)
	require.Len(t, plans, 1)
	plan := plans[0]
	restarts := func() int {
		data, err := os.ReadFile(filepath.Join(dir, "applied.log"))
		if os.IsNotExist(err) {
			return 0
		}
		require.NoError(t, err)
		return strings.Count(string(data), "restarted\n")
	}
	sweepBoth := func() {
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, d := range []*Dispatcher{a, b} {
			wg.Go(func() { _, errs[i] = d.Sweep(ctx) })
		}
		wg.Wait()
		require.NoError(t, errs[0])
		require.NoError(t, errs[1])
	}

	cli := &remediation.Remediator{Store: scli, Groups: remediation.Groups{"oncall": {"U0AAA", "U0BBB"}}}
	src := remediation.Source{Channel: remediation.ChannelCLI, Login: "alice"}
	res, err := cli.VoteFrom(ctx, src, plan.ID, "U0AAA", true, plan.Hash)
	require.NoError(t, err)
	require.Equal(t, store.PlanProposed, res.Plan.State, "one of the two approvals")
	sweepBoth()
	require.NoError(t, a.Idle(ctx))
	require.NoError(t, b.Idle(ctx))
	require.Zero(t, restarts(), "a vote that settles nothing starts nothing")

	res, err = cli.VoteFrom(ctx, src, plan.ID, "U0BBB", true, plan.Hash)
	require.NoError(t, err)
	require.Equal(t, store.PlanApproved, res.Plan.State)
	sweepBoth()
	sweepBoth()
	require.NoError(t, a.Idle(ctx))
	require.NoError(t, b.Idle(ctx))
	sweepBoth()
	require.NoError(t, a.Idle(ctx))
	require.NoError(t, b.Idle(ctx))

	got, err := sa.GetPlan(ctx, plan.ID)
	require.NoError(t, err)
	require.Equal(t, store.PlanDone, got.State)
	require.Equal(t, 1, restarts(), "applied exactly once across the two replicas")
	events, err := sa.Audit(ctx, store.AuditFilter{PlanID: plan.ID, Kind: store.AuditPlanState})
	require.NoError(t, err)
	var claims []store.AuditEvent
	for _, e := range events {
		if strings.Contains(string(e.Detail), `"to":"applying"`) {
			claims = append(claims, e)
		}
	}
	require.Len(t, claims, 1, "one replica claimed the plan")
	require.Equal(t, "U0BBB", claims[0].Actor, "applied as the CLI's approver whose vote decided it")
}
