package commands

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/runbooks/catalog"
)

// TestLibraryShortcuts: the library runbooks' slash-command words bind to
// their params as the README shows them, and the params resolve.
func TestLibraryShortcuts(t *testing.T) {
	t.Parallel()
	cat, problems, err := catalog.Load()
	require.NoError(t, err)
	require.Empty(t, problems)
	for _, tc := range []struct {
		runbook string
		words   []string
		want    map[string]string
	}{
		{"http-alive-not-working", []string{"gpu-node-07", "http://127.0.0.1:8000/health", "http://127.0.0.1:8000/v1/models", "timeout=10s"},
			map[string]string{"host": "gpu-node-07", "health_url": "http://127.0.0.1:8000/health", "url": "http://127.0.0.1:8000/v1/models", "timeout": "10s"}},
		{"systemd-crashloop", []string{"gpu-node-07", "sglang-dsv4-decode"}, map[string]string{"host": "gpu-node-07", "unit": "sglang-dsv4-decode"}},
		{"gpu-node-health", []string{"gpu-node-07", "expected_gpus=4"}, map[string]string{"host": "gpu-node-07", "expected_gpus": "4"}},
	} {
		rb, err := cat.Get(tc.runbook)
		require.NoError(t, err)
		got, err := bindArgs(rb, tc.words)
		require.NoError(t, err, tc.runbook)
		require.Equal(t, tc.want, got, tc.runbook)
		_, _, err = rb.ResolveParams(got)
		require.NoError(t, err, tc.runbook)
	}
}
