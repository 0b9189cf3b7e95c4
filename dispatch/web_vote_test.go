package dispatch

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/store"
)

// A vote from a report page (a Vote From the web) is recorded through
// VoteFrom and audited as from the web, and the one that approves the plan
// applies it in this process at once, as a click does. The sweep takes
// such a plan for one approved away from chat and applies it at once too:
// when it finds the plan first, whichever of the two gets there first
// applies it, and the plan is applied once.
func TestWebVoteAppliesItsPlanOnce(t *testing.T) {
	t.Parallel()
	for _, sweepFirst := range []bool{false, true} {
		name := "the vote applies it"
		if sweepFirst {
			name = "a sweep finds it approved first"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			st, err := store.Open(ctx, filepath.Join(t.TempDir(), "runbot.db"))
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, st.Close()) })
			_, err = st.Heartbeat(ctx, store.DefaultLeaseTTL)
			require.NoError(t, err)
			d := replicaDispatcher(t, st)
			dir := t.TempDir()
			_, err = d.Submit(ctx, Request{Runbook: "stuck-worker", Params: map[string]string{"host": "here", "dir": dir}, RequestedBy: requester, Source: store.TriggerChat})
			require.NoError(t, err)
			require.NoError(t, d.Idle(ctx))
			plans, err := st.ListPlans(ctx, store.PlanFilter{States: []store.PlanState{store.PlanProposed}})
			require.NoError(t, err)
			require.Len(t, plans, 1)
			plan := plans[0]

			web := &remediation.Source{Channel: remediation.ChannelWeb, Login: "alice"}
			first := d.RecordVote(ctx, Vote{PlanID: plan.ID, Hash: plan.Hash, User: "U0AAA", Approve: true, From: web})
			res, err := first.Result()
			require.NoError(t, err)
			require.Equal(t, 1, res.Approvals)
			out, err := d.FinishVote(ctx, first)
			require.NoError(t, err)
			require.False(t, out.Applied, "one of the two approvals")

			second := d.RecordVote(ctx, Vote{PlanID: plan.ID, Hash: plan.Hash, User: "U0BBB", Approve: true, From: web})
			if sweepFirst {
				_, err = d.Sweep(ctx)
				require.NoError(t, err)
			}
			out, err = d.FinishVote(ctx, second)
			require.NoError(t, err)
			if !sweepFirst {
				require.True(t, out.Applied, "the vote that approved the plan applied it")
			}
			_, err = d.Sweep(ctx)
			require.NoError(t, err)
			require.NoError(t, d.Idle(ctx))

			got, err := st.GetPlan(ctx, plan.ID)
			require.NoError(t, err)
			require.Equal(t, store.PlanDone, got.State)
			data, err := os.ReadFile(filepath.Join(dir, "applied.log"))
			require.NoError(t, err)
			require.Equal(t, 1, strings.Count(string(data), "restarted\n"), "applied exactly once")
			events, err := st.Audit(ctx, store.AuditFilter{PlanID: plan.ID, Kind: remediation.AuditVoteSource})
			require.NoError(t, err)
			require.Len(t, events, 2)
			var vs remediation.VoteSource
			require.NoError(t, json.Unmarshal(events[1].Detail, &vs))
			require.Equal(t, *web, vs.Source)
			require.Equal(t, remediation.OutcomeApproved, vs.Outcome)
		})
	}
}
