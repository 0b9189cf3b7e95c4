package inventory_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/yamlnode"
	"github.com/runbot/runbot/inventory"
)

// TestLocalFilesFromTheInventorysDirectory: a host's identity, known_hosts
// and passphrase files are read from the inventory's directory when
// written relative, wherever runbot was started, and each keeps where it
// was written for the checks that report on it.
func TestLocalFilesFromTheInventorysDirectory(t *testing.T) {
	abs, err := filepath.Abs("testdata/files.yaml")
	require.NoError(t, err)
	t.Chdir(t.TempDir())
	inv, err := inventory.Load(abs)
	require.NoError(t, err)
	h, err := inv.Host("gpu-1")
	require.NoError(t, err)
	dir := filepath.Dir(abs)
	require.Equal(t, []string{filepath.Join(dir, "keys/id_ed25519"), "/etc/runbot/ssh/id_rsa", filepath.Join(dir, "keys/extra")}, h.IdentityFiles)
	require.Equal(t, []string{filepath.Join(dir, "ssh/known_hosts")}, h.KnownHosts)
	require.Equal(t, filepath.Join(dir, "keys/pass"), h.PassphraseFile)
	for _, tc := range []struct {
		key  string
		want yamlnode.Pos
	}{
		{"identity_files.0", yamlnode.Pos{Line: 4, Col: 22}},
		{"identity_files.1", yamlnode.Pos{Line: 4, Col: 39}},
		{"identity_files.2", yamlnode.Pos{Line: 5, Col: 20}},
		{"known_hosts.0", yamlnode.Pos{Line: 6, Col: 18}},
		{"passphrase_file", yamlnode.Pos{Line: 7, Col: 22}},
		{"labels", yamlnode.Pos{Line: 3, Col: 5}}, // not written: the host's own position
	} {
		require.Equal(t, tc.want, h.Pos(tc.key), tc.key)
	}
}
