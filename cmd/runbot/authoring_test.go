package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// authoringCLI runs runbot in this process with args, with only the
// built-in runbooks and a store of its own, as a user writing a first
// runbook runs it, and returns what it printed and its error.
func authoringCLI(tb testing.TB, args ...string) (stdout, stderr string, err error) {
	tb.Helper()
	root := newRootCmd()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(append(args, "--store", filepath.Join(tb.TempDir(), "runbot.db")))
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
