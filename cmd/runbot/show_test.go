package main

import (
	"encoding/json"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestShowKeepsStepDurations: `runbot show` prints each step's duration as
// the live run did (it printed 0s for every step), and the JSON of history
// and show names the run run_id as `runbot run` does.
func TestShowKeepsStepDurations(t *testing.T) {
	runbot, _ := buildBinaries(t)
	db := t.TempDir() + "/runbot.db"
	live, stderr, code := runRunbot(t, runbot, "run", "testdata/timed.yaml", "-i", "testdata/local.yaml", "-p", "host=here", "--store", db)
	require.Equal(t, 0, code, stderr)
	stepLine := regexp.MustCompile(`(?m)^\s+ok\s+slow\s+host\s+(\S+)`)
	m := stepLine.FindStringSubmatch(live)
	require.NotNil(t, m, live)
	require.NotEqual(t, "0s", m[1], "the live run timed the step")

	hist, stderr, code := runRunbot(t, runbot, "history", "--format", "json", "--store", db)
	require.Equal(t, 0, code, stderr)
	var runs []map[string]any
	require.NoError(t, json.Unmarshal([]byte(hist), &runs), hist)
	require.Len(t, runs, 1)
	require.NotEmpty(t, runs[0]["run_id"])
	require.Equal(t, runs[0]["id"], runs[0]["run_id"])
	id := runs[0]["run_id"].(string)

	shown, stderr, code := runRunbot(t, runbot, "show", id, "--store", db)
	require.Equal(t, 0, code, stderr)
	m = stepLine.FindStringSubmatch(shown)
	require.NotNil(t, m, shown)
	require.NotEqual(t, "0s", m[1], "the stored run keeps the step's duration:\n%s", shown)
	require.Regexp(t, `^[0-9.]+(ms|s)$`, m[1])

	doc, stderr, code := runRunbot(t, runbot, "show", id, "--store", db, "--format", "json")
	require.Equal(t, 0, code, stderr)
	var shownDoc struct {
		Run map[string]any `json:"run"`
	}
	require.NoError(t, json.Unmarshal([]byte(doc), &shownDoc))
	require.Equal(t, id, shownDoc.Run["run_id"])
}
