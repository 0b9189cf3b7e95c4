package remediation_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/store"
)

// Where a plan stands counts what the store counts toward settling it,
// the distinct people who approved its current hash, and names the
// runbook its body says proposed it.
func TestStandings(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "runbot.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	run, err := st.CreateRun(ctx, store.Run{Runbook: "fix", Trigger: store.TriggerAlert, RequestedBy: "U0REQ"})
	require.NoError(t, err)
	newPlan := func(body string) store.Plan {
		p, _, err := st.CreatePlan(ctx, store.Plan{RunID: run.ID, Remediation: "fix", Diagnosis: "broken", Deployment: "here",
			Hash: "h1", Body: []byte(body), RequestedBy: "U0REQ", Policy: store.Policy{Approvers: []string{"U0ALICE", "U0BOB", "U0CAROL"}, MinApprovals: 3}})
		require.NoError(t, err)
		return p
	}
	voted := newPlan(`{"runbook": "disk-full"}`)
	rem := &remediation.Remediator{Store: st}
	for _, v := range []struct {
		user    string
		approve bool
	}{{"U0ALICE", true}, {"U0ALICE", true}, {"U0BOB", false}} {
		_, err := rem.Vote(ctx, voted.ID, v.user, v.approve, voted.Hash)
		require.NoError(t, err)
	}
	unnamed := newPlan(`{"remediation": "fix"}`)

	got, err := remediation.Standings(ctx, st, []store.Plan{voted, unnamed})
	require.NoError(t, err)
	require.Equal(t, []remediation.Standing{
		{Plan: voted, Runbook: "disk-full", Approvals: 1},
		{Plan: unnamed, Runbook: "", Approvals: 0},
	}, got)
}
