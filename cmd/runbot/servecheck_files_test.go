package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestServeCheckFiles: serve --check, run from another directory than the
// config's, reads the config's relative paths from the config's directory
// and reports a host's missing identity file and known_hosts at the
// inventory's line, by absolute path, and a listen address without a
// usable port at the config's: what serve would have found only at the
// first run, or when it started to listen.
func TestServeCheckFiles(t *testing.T) {
	runbot, _ := buildBinaries(t)
	dir := t.TempDir()
	etc := filepath.Join(dir, "etc")
	require.NoError(t, os.MkdirAll(etc, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(etc, "runbot.yaml"), []byte("listen: \":99999\"\nstore: state/runbot.db\ninventory: inventory.yaml\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(etc, "inventory.yaml"), []byte("hosts:\n  gpu-1:\n    address: 10.0.0.1\n    identity_file: ssh/id\n    known_hosts: ssh/known_hosts\n"), 0o600))
	noRunbooks := t.TempDir()

	stdout, stderr, code := checkCmd(t, runbot, t.TempDir(), "--config", filepath.Join(etc, "runbot.yaml"), "--runbook-dir", noRunbooks)
	require.Equal(t, 1, code, "stdout: %s\nstderr: %s", stdout, stderr)
	require.Equal(t, etc+`/inventory.yaml:4:20: host gpu-1: identity file `+etc+`/ssh/id does not exist: every run on the host would fail
`+etc+`/inventory.yaml:5:18: host gpu-1: known_hosts file `+etc+`/ssh/known_hosts does not exist: every run on the host would fail
`+etc+`/runbot.yaml:1:9: listen must be host:port with a port from 1 to 65535 or a TCP service name, got ":99999": port 99999 is out of range
`, stdout)
	require.NoDirExists(t, filepath.Join(etc, "state"), "--check creates no store")
}
