package main

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/replay"
)

// TestRunRecordReplays records a real run of sglang-pd-wedge (at its
// production defaults) against the simulator with `runbot run --record`,
// with a secret planted in the decode serve script that the run reads:
// the recording holds no trace of the secret, and `runbot test` replays it
// to the very findings and diagnoses the live run reported.
func TestRunRecordReplays(t *testing.T) {
	runbot, sim := buildBinaries(t)
	dep := t.TempDir()
	out, err := exec.Command(sim, "up", "--dir", dep).CombinedOutput()
	require.NoError(t, err, "%s", out)
	t.Cleanup(func() { _ = exec.Command(sim, "down", "--dir", dep).Run() })
	// One secret the default patterns catch, one that only --redact does.
	const secret, inside = "hf_s3cr3tValueThatMustNotLeak", "vault-7f3a.corp.internal"
	script := filepath.Join(dep, "serve_decode.sh")
	f, err := os.OpenFile(script, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = fmt.Fprintf(f, "\n# export HF_TOKEN=%s\n# on %s\n", secret, inside)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	rec := filepath.Join(t.TempDir(), "rec")
	stdout, stderr, code := runRunbot(t, runbot, "run", "sglang-pd-wedge", "-i", filepath.Join(dep, "inventory.yaml"),
		"-p", "deployment=sim", "--store", filepath.Join(dep, "runbot.db"), "--record", rec, "--redact", `vault-\w+\.corp\.internal`, "--format", "json")
	require.Equal(t, exitOK, code, "%s\n%s", stdout, stderr)
	var live runbooks.Report
	require.NoError(t, json.Unmarshal([]byte(stdout), &live))
	require.Equal(t, "healthy", live.Diagnoses[0].ID)

	redacted, redactedToo := false, false
	require.NoError(t, filepath.WalkDir(rec, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		require.NotContains(t, string(b), secret, p)
		require.NotContains(t, string(b), inside, p)
		redacted = redacted || strings.Contains(string(b), "HF_TOKEN=[redacted]")
		redactedToo = redactedToo || strings.Contains(string(b), "# on [redacted]")
		return nil
	}))
	require.True(t, redacted, "the planted line is in the recording, redacted")
	require.True(t, redactedToo, "the --redact pattern's match is in the recording, redacted")

	tf := filepath.Join(t.TempDir(), "sim_test.yaml")
	require.NoError(t, os.WriteFile(tf, []byte("runbook: sglang-pd-wedge\ntests:\n  - name: recorded\n    recording: "+rec+"\n    expect:\n      diagnoses: [healthy]\n"), 0o644))
	stdout, stderr, code = runRunbot(t, runbot, "test", "--format", "json", tf)
	require.Equal(t, 0, code, "%s\n%s", stdout, stderr)
	var doc replay.Suite
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc))
	require.Len(t, doc.Results, 1)
	got := doc.Results[0].Report
	require.Equal(t, summaries(live.Findings), summaries(got.Findings))
	require.Equal(t, live.Diagnoses, got.Diagnoses)
	require.Equal(t, live.Outcome, got.Outcome)

	// The stored run, exported: its results replay to the same verdict.
	exported := filepath.Join(t.TempDir(), "exported")
	_, stderr, code = runRunbot(t, runbot, "show", live.RunID, "--store", filepath.Join(dep, "runbot.db"), "--export", exported)
	require.Equal(t, 0, code, stderr)
	require.NoError(t, os.WriteFile(tf, []byte("runbook: sglang-pd-wedge\ntests:\n  - name: exported\n    recording: "+exported+"\n    expect:\n      diagnoses: [healthy]\n      findings: [serving]\n"), 0o644))
	stdout, stderr, code = runRunbot(t, runbot, "test", "--format", "json", tf)
	require.Equal(t, 0, code, "%s\n%s", stdout, stderr)
	doc = replay.Suite{}
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc))
	got = doc.Results[0].Report
	require.Equal(t, summaries(live.Findings), summaries(got.Findings))
	require.Equal(t, live.Diagnoses, got.Diagnoses)

	// A directory that is not empty is refused before the run starts.
	_, stderr, code = runRunbot(t, runbot, "run", "sglang-pd-wedge", "-i", filepath.Join(dep, "inventory.yaml"),
		"-p", "deployment=sim", "--store", filepath.Join(dep, "runbot.db"), "--record", rec)
	require.Equal(t, exitBadInput, code)
	require.Contains(t, stderr, "is not empty")
}

func summaries(fs []runbooks.FindingResult) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.ID+": "+f.Summary+" | "+strings.Join(f.Evidence, " | "))
	}
	return out
}
