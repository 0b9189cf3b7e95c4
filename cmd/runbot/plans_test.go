package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/console"
	"github.com/runbot/runbot/store"
)

// runbot plans lists the plans awaiting approval, newest first, with what
// an approver needs (who asked, how many approvals of how many, who may
// approve, until when); --all adds every other state; --format json says
// the same by name; a PLAN argument shows that plan as runbot approve
// votes on it. With --config the store is serve's.
func TestPlansListsWhatAwaitsApproval(t *testing.T) {
	runbot, _ := buildBinaries(t)
	s := newApproveSite(t, runbot)
	cfg := s.config("runbot.yaml", "operators:\n  "+s.login+": U0BOB\n")

	stdout, stderr, code := s.cli(nil, "plans", "--config", cfg)
	require.Equal(t, 0, code, stderr)
	require.Equal(t, "No plans are awaiting approval (runbot plans --all lists every plan).\n", stdout)

	denied := s.propose("cli-fix", "U0ALICE")
	_, stderr, code = s.cli(nil, "deny", denied.PlanID, "--config", cfg)
	require.Equal(t, 0, code, stderr)
	brief := s.propose("cli-fix-brief", "U0ALICE")
	// cli-fix-brief's window is a second: the list says when it closed.
	time.Sleep(1500 * time.Millisecond)

	for _, args := range [][]string{{"--config", cfg}, {"--store", s.db}} {
		stdout, stderr, code = s.cli(nil, append([]string{"plans"}, args...)...)
		require.Equal(t, 0, code, stderr)
		lines := strings.Split(strings.TrimSpace(stdout), "\n")
		require.Len(t, lines, 2, "the header and the one plan awaiting approval:\n%s", stdout)
		require.Equal(t, []string{"PLAN", "RUN", "RUNBOOK/REMEDIATION", "DEPLOYMENT", "DIAGNOSIS", "STATE", "APPROVALS", "APPROVERS", "EXPIRES"}, strings.Fields(lines[0]))
		for _, want := range []string{brief.PlanID, brief.RunID, "cli-fix-brief/fix", "host/here", "needs_fix", "proposed", "0 of 1", "U0ALICE", "expired 20"} {
			require.Contains(t, lines[1], want)
		}
	}

	stdout, stderr, code = s.cli(nil, "plans", "--all", "--config", cfg)
	require.Equal(t, 0, code, stderr)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	require.Len(t, lines, 3)
	require.Contains(t, lines[1], brief.PlanID, "newest first")
	require.Contains(t, lines[2], denied.PlanID)
	for _, want := range []string{"cli-fix/fix", "denied", "0 of 2", "U0ALICE,U0BOB (two-person: not U0ALICE)"} {
		require.Contains(t, lines[2], want)
	}
	cols := strings.Fields(lines[2])
	require.Equal(t, "-", cols[len(cols)-1], "a denied plan has no window: %q", lines[2])

	all := s.plans("--all", "--config", cfg)
	require.Len(t, all, 2)
	got := all[1]
	require.Equal(t, console.PlanDoc{PlanID: denied.PlanID, RunID: denied.RunID, Runbook: "cli-fix", Remediation: "fix", Deployment: "host/here",
		Diagnosis: "needs_fix", State: store.PlanDenied, Hash: denied.Hash, Approvals: 0, Needed: 2, Approvers: []string{"U0ALICE", "U0BOB"},
		TwoPerson: true, RequestedBy: "U0ALICE", CreatedAt: got.CreatedAt, ExpiresAt: got.ExpiresAt}, got)
	require.WithinDuration(t, got.CreatedAt.Add(15*time.Minute), got.ExpiresAt, time.Second)

	stdout, stderr, code = s.cli(nil, "plans", denied.PlanID, "--config", cfg)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "Proposed remediation fix for needs_fix on host/here (plan "+denied.PlanID+", hash "+denied.Hash[:12]+")")
	require.Contains(t, stdout, "Run "+denied.RunID+", plan "+denied.PlanID+": denied; 0 of 2 approvals; approvers: U0ALICE, U0BOB (two-person rule: U0ALICE, who asked, cannot approve)")
	stdout, stderr, code = s.cli(nil, "plans", denied.PlanID, "--config", cfg, "--format", "json")
	require.Equal(t, 0, code, stderr)
	var one struct {
		console.PlanDoc
		Plan struct {
			Runbook string `json:"runbook"`
			Actions []any  `json:"actions"`
		} `json:"plan"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &one))
	require.Equal(t, denied.Hash, one.Hash)
	require.Equal(t, "cli-fix", one.Plan.Runbook)
	require.Len(t, one.Plan.Actions, 1)

	_, stderr, code = s.cli(nil, "plans", "--format", "yaml", "--config", cfg)
	require.Equal(t, 1, code)
	require.Contains(t, stderr, `--format "yaml": want text or json`)
}
