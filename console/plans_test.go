package console_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/console"
	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/store"
)

// The plans table says, a plan a line, what it fixes where, its state,
// its approvals of the needed, who may approve and until when.
func TestPlans(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	plan := func(id string, state store.PlanState, pol store.Policy) store.Plan {
		return store.Plan{ID: id, RunID: "r-" + id, Remediation: "restart", Diagnosis: "wedged", Deployment: "dsv4",
			RequestedBy: "alertmanager", State: state, Policy: pol}
	}
	cases := []struct {
		name string
		line remediation.Standing
		want string
	}{
		{"waiting, two-person", remediation.Standing{Runbook: "sglang-pd-wedge", Approvals: 1,
			Plan: plan("p-1", store.PlanProposed, store.Policy{Approvers: []string{"U01ALICE", "@sre"}, MinApprovals: 2, TwoPerson: true, ExpiresAt: now.Add(15 * time.Minute)})},
			"p-1   r-p-1  sglang-pd-wedge/restart  dsv4        wedged     proposed  1 of 2     U01ALICE,@sre (two-person: not alertmanager)  2025-03-01 12:15:00Z"},
		{"window closed", remediation.Standing{Runbook: "sglang-pd-wedge",
			Plan: plan("p-2", store.PlanProposed, store.Policy{Approvers: []string{"U01ALICE"}, ExpiresAt: now.Add(-time.Minute)})},
			"p-2   r-p-2  sglang-pd-wedge/restart  dsv4        wedged     proposed  0 of 1     U01ALICE  expired 2025-03-01 11:59:00Z"},
		{"no expiry", remediation.Standing{Runbook: "x", Approvals: 1,
			Plan: plan("p-3", store.PlanApproved, store.Policy{Approvers: []string{"U01ALICE"}})},
			"p-3   r-p-3  x/restart  dsv4        wedged     approved  1 of 1     U01ALICE   never"},
		{"done", remediation.Standing{Approvals: 1,
			Plan: plan("p-4", store.PlanDone, store.Policy{Approvers: []string{"U01ALICE"}, ExpiresAt: now.Add(time.Minute)})},
			"p-4   r-p-4  -/restart  dsv4        wedged     done      1 of 1     U01ALICE   -"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			require.NoError(t, console.Plans(&buf, []remediation.Standing{tc.line}, now))
			lines := bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))
			require.Len(t, lines, 2)
			require.Equal(t, "PLAN", string(bytes.Fields(lines[0])[0]))
			require.Equal(t, fields(tc.want), fields(string(lines[1])))
		})
	}
}

// fields compares table lines by their columns, not by the padding the
// widest cell of a column sets.
func fields(s string) []string {
	var out []string
	for _, f := range bytes.Fields([]byte(s)) {
		out = append(out, string(f))
	}
	return out
}
