package slackchat

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/runview"
	"github.com/runbot/runbot/slackchat/slackrec"
	"github.com/runbot/runbot/store"
)

// planOf returns the run's only plan.
func (h *harness) planOf(runID string) store.Plan {
	h.t.Helper()
	plans, err := h.store.ListPlans(h.t.Context(), store.PlanFilter{RunID: runID})
	require.NoError(h.t, err)
	require.Len(h.t, plans, 1)
	return plans[0]
}

// An approver group backed by a Slack user group follows the rotation in
// Slack: whoever is in the user group when they click may approve. When
// the lookup fails, the vote is refused as unknown, never counted.
func TestApproverGroupBackedBySlackUserGroup(t *testing.T) {
	t.Parallel()
	const rotating = "U0ROTA"
	cases := []struct {
		name    string
		setup   func(h *harness)
		counted bool
		reply   string
	}{
		{"in the user group", func(h *harness) { h.rec.SetUserGroup("S0ONCALL", rotating) }, true, "Approval recorded (1 of 2 needed)"},
		{"not in the user group", func(h *harness) { h.rec.SetUserGroup("S0ONCALL", approverA) }, false, "You are not an approver"},
		{"lookup fails", func(h *harness) {
			h.rec.FailNext("usergroups.users.list", slackrec.Failure{Error: "missing_scope"})
		}, false, "Could not check whether you may approve (members of @oncall: look up members of Slack user group S0ONCALL: missing_scope), so your vote was not counted"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, func(c *Config) { c.SlackUsergroups = map[string]string{"oncall": "S0ONCALL"} })
			tc.setup(h)
			run, ts := h.runOnce("")
			value := buttonValue(t, h.lastMessage(ts), runview.ActionApprove)
			h.click(rotating, runview.ActionApprove, value, ts)
			h.idle()
			require.Contains(t, strings.Join(h.ephemeralsTo(rotating), "\n"), tc.reply)
			approvals, err := h.store.Approvals(t.Context(), h.planOf(run.ID).ID)
			require.NoError(t, err)
			require.Equal(t, tc.counted, len(approvals) == 1, "approvals: %+v", approvals)
			require.Equal(t, store.PlanProposed, h.planOf(run.ID).State)
		})
	}
}
