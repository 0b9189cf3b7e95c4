package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRemediateNamesTheMissingGroup: a plan only a group may approve says,
// when the CLI run defines no such group, that --group is what is missing;
// with --group the same approval goes through and the fix is applied.
func TestRemediateNamesTheMissingGroup(t *testing.T) {
	runbot, _ := buildBinaries(t)
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	require.NoError(t, os.WriteFile(state, []byte("broken\n"), 0o600))
	args := []string{"run", "testdata/group-fix.yaml", "-i", "testdata/local.yaml", "-p", "host=here", "-p", "dir=" + dir,
		"--store", filepath.Join(dir, "runbot.db"), "--remediate", "--requested-by", "alice", "--approve-as", "bob"}

	out, stderr, code := runRunbot(t, runbot, args...)
	require.NotEqual(t, 0, code)
	require.Contains(t, out, "Note: approver group oncall has no members in this run; pass --group oncall=USER[,USER...]")
	require.Contains(t, stderr, "not an approver for this remediation")
	require.Contains(t, stderr, "pass --group oncall=USER[,USER...]")
	got, err := os.ReadFile(state)
	require.NoError(t, err)
	require.Equal(t, "broken\n", string(got), "a refused approval changes nothing")

	out, stderr, code = runRunbot(t, runbot, append(args, "--group", "oncall=bob")...)
	require.Equal(t, 0, code, "%s\n%s", out, stderr)
	require.NotContains(t, out, "has no members")
	got, err = os.ReadFile(state)
	require.NoError(t, err)
	require.Equal(t, "ok\n", string(got))
}
