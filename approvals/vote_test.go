package approvals_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/approvals"
	"github.com/runbot/runbot/config"
	"github.com/runbot/runbot/internal/redact"
	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/store"
)

// A vote from runbot's host shows the plan, votes as the identity
// operators: maps the login to, under the plan's policy, and says what
// the vote did or why it was refused; what it refuses changes nothing.
func TestVoterVote(t *testing.T) {
	t.Parallel()
	cfg := &config.Config{File: "/etc/runbot/runbot.yaml", Groups: map[string][]string{"oncall": {"U0BOB"}}}
	for _, tc := range []struct {
		name      string
		identity  string
		approve   bool
		pinned    string
		plan      string
		wantErr   string
		wantOut   string
		wantState store.PlanState
	}{
		{"an approver approves", "U0BOB", true, "", "", "", "Approved: plan", store.PlanApproved},
		{"an approver denies", "U0BOB", false, "", "", "", "Denied: plan", store.PlanDenied},
		{"the pinned hash is of another plan", "U0BOB", true, "00000000", "", "approve refused: plan", "", store.PlanProposed},
		{"not an approver", "U0EVE", true, "", "", "approve refused: U0EVE (OS user eve) is not an approver", "", store.PlanProposed},
		{"the requester, under the two-person rule", "U0REQ", true, "", "", "approve refused: the two-person rule applies", "", store.PlanProposed},
		{"no such plan", "U0BOB", false, "", "nope", "deny refused: no plan nope in runbot serve's store", "", store.PlanProposed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			st, err := store.Open(ctx, filepath.Join(t.TempDir(), "runbot.db"))
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, st.Close()) })
			run, err := st.CreateRun(ctx, store.Run{Runbook: "fix", Trigger: store.TriggerAlert, RequestedBy: "U0REQ"})
			require.NoError(t, err)
			body := remediation.PlanBody{Runbook: "fix", Remediation: "restart", Diagnosis: "broken", Deployment: "here"}
			raw, err := json.Marshal(body)
			require.NoError(t, err)
			plan, _, err := st.CreatePlan(ctx, store.Plan{RunID: run.ID, Remediation: "restart", Diagnosis: "broken", Deployment: "here",
				Hash: body.Hash(), Body: raw, RequestedBy: "U0REQ",
				Policy: store.Policy{Approvers: []string{"@oncall", "U0REQ"}, TwoPerson: true, ExpiresAt: time.Now().Add(time.Hour)}})
			require.NoError(t, err)
			id := plan.ID
			if tc.plan != "" {
				id = tc.plan
			}
			r, err := redact.New(nil)
			require.NoError(t, err)
			var stdout, stderr bytes.Buffer
			out := redact.NewWriter(&stdout, r, false, "", &stderr)
			v := &approvals.Voter{Config: cfg, Approve: tc.approve, Login: "eve", Identity: tc.identity}
			err = v.Vote(ctx, st, id, tc.pinned, out, &stderr)
			require.NoError(t, out.Flush())
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
			} else {
				require.NoError(t, err)
				require.Contains(t, stdout.String(), "Proposed remediation restart for broken on here (plan "+plan.ID)
				require.Contains(t, stdout.String(), "Voting "+approvals.Verb(tc.approve)+" as "+tc.identity+" (OS user eve, operators: of /etc/runbot/runbot.yaml)")
				require.Contains(t, stdout.String(), tc.wantOut)
			}
			got, err := st.GetPlan(ctx, plan.ID)
			require.NoError(t, err)
			require.Equal(t, tc.wantState, got.State)
		})
	}
}
