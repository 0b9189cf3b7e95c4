package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestListShowsParams: `runbot list` shows every shipped runbook with its
// shortcut and, under it, each param with what a caller needs to pass it.
func TestListShowsParams(t *testing.T) {
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs([]string{"list"})
	require.NoError(t, root.Execute())
	text := out.String()
	for _, want := range []struct{ runbook, command, params string }{
		{"http-alive-not-working", "alive", "params: host (required) [host], health_url (required), url (required), method=GET [enum, GET|POST|PUT|HEAD]"},
		{"systemd-crashloop", "crashloop", "params: host (required) [host], unit (required), journal_lines=200 [int, 10..5000], watch_seconds=10 [int, 0..120]"},
		{"gpu-node-health", "gpu", "params: host (required) [host], expected_gpus=8 [int, 1..64]"},
		{"sglang-pd-wedge", "wedge", "params: deployment (required) [deployment], probe_timeout=35s [duration, 1s..1m30s]"},
	} {
		lines := strings.Split(text, "\n")
		found := false
		for i, l := range lines {
			if strings.HasPrefix(l, want.runbook+" ") {
				found = true
				require.Equal(t, want.command, strings.Fields(l)[1], l)
				require.Less(t, i+1, len(lines))
				require.Contains(t, lines[i+1], want.params)
			}
		}
		require.True(t, found, "%s is not listed:\n%s", want.runbook, text)
	}
}
