package main

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/runbooks/replay"
	"github.com/runbot/runbot/timeline"
)

// authoringCLI runs runbot in this process with args, as a user writing
// a first runbook runs it, with a store of its own unless args name one,
// and returns what it printed and its error.
func authoringCLI(tb testing.TB, args ...string) (stdout, stderr string, err error) {
	tb.Helper()
	root := newRootCmd()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	if !slices.Contains(args, "--store") {
		args = append(args, "--store", filepath.Join(tb.TempDir(), "runbot.db"))
	}
	root.SetArgs(args)
	err = root.Execute()
	return out.String(), errOut.String(), err
}

// TestRunNamesTheMissingFileAndTheRunbookMeant: a runbook argument that
// is a path to no file says so (it said "unknown runbook"), with the
// runbook file or the runbook a similar name points at; a name with a
// typo in it suggests the runbook meant.
func TestRunNamesTheMissingFileAndTheRunbookMeant(t *testing.T) {
	t.Setenv("RUNBOT_RUNBOOKS", "")
	t.Setenv("RUNBOT_CONFIG", "")
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "disk-full.yaml"), nil, 0o644))
	for _, tc := range []struct {
		name, arg string
		missing   bool   // the error is the file's: no such file or directory
		want      string // in the error
	}{
		{name: "a file that does not exist", arg: "missing.yaml", missing: true,
			want: "runbook file missing.yaml: no such file or directory"},
		{name: "a .yml file", arg: "missing.yml", missing: true,
			want: "runbook file missing.yml: no such file or directory"},
		{name: "a path without an extension", arg: filepath.Join(dir, "nothing-here"), missing: true,
			want: "runbook file " + filepath.Join(dir, "nothing-here") + ": no such file or directory"},
		{name: "a typo in the file beside it", arg: filepath.Join(dir, "disk-ful.yaml"), missing: true,
			want: "no such file or directory (did you mean " + filepath.Join(dir, "disk-full.yaml") + "?)"},
		{name: "the file without its extension", arg: filepath.Join(dir, "disk-full"), missing: true,
			want: "no such file or directory (did you mean " + filepath.Join(dir, "disk-full.yaml") + "?)"},
		{name: "a runbook's name as a file", arg: "sglang-pd-wegde.yaml", missing: true,
			want: `runbook file sglang-pd-wegde.yaml: no such file or directory (did you mean the runbook "sglang-pd-wedge"?)`},
		{name: "a transposition", arg: "sglang-pd-wegde", want: `unknown runbook "sglang-pd-wegde" (did you mean "sglang-pd-wedge"?)`},
		{name: "a missing character", arg: "sglang-pd-wede", want: `(did you mean "sglang-pd-wedge"?)`},
		{name: "an extra character", arg: "host-bassics", want: `(did you mean "host-basics"?)`},
		{name: "a missing suffix", arg: "gpu-node", want: `(did you mean "gpu-node-health"?)`},
		{name: "the chat command", arg: "wedge", want: `(did you mean "sglang-pd-wedge"? wedge is its chat command)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := authoringCLI(t, "run", tc.arg)
			require.ErrorContains(t, err, tc.want)
			if tc.missing {
				require.ErrorIs(t, err, fs.ErrNotExist)
				require.NotContains(t, err.Error(), "unknown runbook")
			}
		})
	}
}

// TestTestFileTypoFails: runbot test on a test file whose tests key is
// misspelt prints the problem with a did-you-mean, ends with a FAIL line
// that counts it, and exits 1 (it said the file had no cases and
// "0 test(s), 0 failed"); in JSON the problem is in the document.
func TestTestFileTypoFails(t *testing.T) {
	t.Setenv("RUNBOT_RUNBOOKS", "")
	t.Setenv("RUNBOT_CONFIG", "")
	path := filepath.Join(t.TempDir(), "host-basics_test.yaml")
	require.NoError(t, os.WriteFile(path, []byte("runbook: host-basics\ntset:\n  - name: roomy\n    recording: recordings/roomy\n    expect:\n      outcome: ok\n"), 0o644))

	stdout, _, err := authoringCLI(t, "test", path)
	require.ErrorIs(t, err, exitError{exitBadInput}, stdout)
	require.Contains(t, stdout, path+`:2:1: test file: unknown key "tset" (did you mean "tests"?)`+"\n")
	require.Contains(t, stdout, path+":1:1: test file: tests is required (the list of test cases), and there is none\n")
	require.Contains(t, stdout, "FAIL\n")
	require.Contains(t, stdout, "FAIL\t0 test(s), 0 failed, 2 problem(s) (see above)\t")

	stdout, _, err = authoringCLI(t, "test", "--format", "json", path)
	require.ErrorIs(t, err, exitError{exitBadInput}, stdout)
	var doc replay.Suite
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc), stdout)
	require.False(t, doc.Passed)
	require.Contains(t, doc.Problems, path+`:2:1: test file: unknown key "tset" (did you mean "tests"?)`)
}

// TestTimelineWithNothingToDraw: a run whose checks observed nothing over
// time has no timeline. runbot run --timeline still exits with the run's
// outcome and notes why there is no picture; runbot show --timeline, asked
// for the picture only, fails with that reason (it exited 0), and neither
// leaves a file behind.
func TestTimelineWithNothingToDraw(t *testing.T) {
	t.Setenv("RUNBOT_RUNBOOKS", "")
	t.Setenv("RUNBOT_CONFIG", "")
	dir := t.TempDir()
	db, png := filepath.Join(dir, "runbot.db"), filepath.Join(dir, "out.png")
	why := "no timeline drawn into " + png + ": build timeline of run "

	stdout, stderr, err := authoringCLI(t, "run", "testdata/timed.yaml", "-i", "testdata/local.yaml", "-p", "host=here", "--store", db, "--timeline", png)
	require.NoError(t, err, "a run without a picture keeps its outcome\n%s\n%s", stdout, stderr)
	require.Contains(t, stdout, "Outcome: ok")
	require.Contains(t, stderr, why)
	require.Contains(t, stderr, "the run recorded nothing a timeline can show (a timeline shows HTTP probes, log progress, error lines and metric samples over time")
	require.NoFileExists(t, png)

	hist, _, err := authoringCLI(t, "history", "--format", "json", "--store", db)
	require.NoError(t, err)
	var runs []struct {
		RunID string `json:"run_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(hist), &runs), hist)
	require.Len(t, runs, 1)

	_, _, err = authoringCLI(t, "show", runs[0].RunID, "--store", db, "--timeline", png)
	require.ErrorIs(t, err, timeline.ErrNothingToDraw)
	require.ErrorContains(t, err, why+runs[0].RunID+": the run recorded nothing a timeline can show")
	require.NotErrorAs(t, err, new(exitError), "main prints the error and exits 1")
	require.NoFileExists(t, png)
}
