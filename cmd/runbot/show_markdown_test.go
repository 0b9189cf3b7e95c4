package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// `runbot show RUN --format markdown` prints the run's postmortem draft,
// redacted: the step of this runbook prints secrets.
func TestShowMarkdownIsARedactedPostmortem(t *testing.T) {
	runbot, _ := buildBinaries(t)
	db := t.TempDir() + "/runbot.db"
	_, stderr, _ := runRunbot(t, runbot, "run", "../../web/testdata/runbooks/leaky-config.yaml", "-i", "testdata/local.yaml",
		"-p", "deployment=edge-1", "-p", "host=here", "--store", db)
	hist, stderr2, code := runRunbot(t, runbot, "history", "--store", db)
	require.Equal(t, 0, code, stderr+stderr2)
	id := strings.Fields(strings.Split(strings.TrimSpace(hist), "\n")[1])[0]
	require.True(t, strings.HasPrefix(id, "r-"), hist)

	md, stderr, code := runRunbot(t, runbot, "show", id[:12], "--format", "markdown", "--store", db)
	require.Equal(t, 0, code, stderr)
	for _, want := range []string{"# Postmortem draft: Config dump with secrets in it on edge-1", "## Summary", "## Timeline", "| Time (UTC) | What happened | Who |",
		"runbook leaky-config started (cli trigger)", "## Key evidence", "db = db_password=[redacted]", id} {
		require.Contains(t, md, want)
	}
	for _, secret := range []string{"Planted-Pw-4711", "xoxb-1111-2222-plantedtoken", "AKIAPLANTED000000XYZ"} {
		require.NotContains(t, md, secret)
	}
}
