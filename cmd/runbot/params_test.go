package main

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOutOfRangeParamsAreBadInput: a param outside its declared range stops
// `runbot run` before anything runs or is recorded, with exit 1 and one line
// that states the range.
func TestOutOfRangeParamsAreBadInput(t *testing.T) {
	runbot, _ := buildBinaries(t)
	store := t.TempDir() + "/runbot.db"
	cases := []struct {
		name  string
		param string
		want  string
	}{
		{"samples", "samples=-5", "runbook sglang-pd-wedge: param samples: want an int from 2 to 30, got -5"},
		{"sample_interval", "sample_interval=1ns", "runbook sglang-pd-wedge: param sample_interval: want a duration from 100ms to 20s, got 1ns"},
		{"probe_timeout", "probe_timeout=0s", "runbook sglang-pd-wedge: param probe_timeout: want a duration from 1s to 1m30s, got 0s"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(runbot, "run", "sglang-pd-wedge", "-i", "testdata/local.yaml", "-p", "deployment=dsv4", "-p", c.param, "--store", store)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit)
			require.Equal(t, exitBadInput, exit.ExitCode())
			msg := strings.TrimSpace(stderr.String())
			require.Contains(t, msg, c.want)
			require.Equal(t, 1, strings.Count(msg, "\n")+1, "one line: %q", msg)
			require.Empty(t, stdout.String())
		})
	}

	out, err := exec.Command(runbot, "history", "--format", "json", "--store", store).Output()
	require.NoError(t, err)
	var runs []map[string]any
	require.NoError(t, json.Unmarshal(out, &runs), string(out))
	require.Empty(t, runs, "bad input records no run")
}
