package runbooks_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/inventory"
	"github.com/runbot/runbot/remote/sshrun"
	"github.com/runbot/runbot/runbooks/bind"
)

// TestPoolRunnersSSHConfig: every SSH field of an inventory host reaches
// the runner's configuration, with its jump hosts first hop first.
func TestPoolRunnersSSHConfig(t *testing.T) {
	y := `
hosts:
  gpu-1:
    address: 10.0.0.5
    port: 2201
    user: root
    identity_files: [/keys/id_ed25519]
    passphrase_env: KEY_PASS
    known_hosts: [/keys/known_hosts]
    trust_on_first_use: true
    connect_timeout: 3s
    jump: inner
  inner:
    address: 10.0.0.1
    agent: true
    host_keys: ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeFakeFakeFakeFakeFakeFakeFakeFakeFakeFake"]
    jump: outer
  outer:
    address: bastion.example
    passphrase_file: /keys/pass
deployments:
  d:
    roles:
      decode: {host: gpu-1}
`
	path := filepath.Join(t.TempDir(), "inventory.yaml")
	require.NoError(t, os.WriteFile(path, []byte(y), 0o600))
	inv, err := inventory.Load(path)
	require.NoError(t, err)
	h, err := inv.Host("gpu-1")
	require.NoError(t, err)
	cfg, err := (&bind.PoolRunners{Inventory: inv}).SSHConfig(h)
	require.NoError(t, err)
	require.Equal(t, sshrun.Config{
		Name: "gpu-1", Address: "10.0.0.5", Port: 2201, User: "root",
		IdentityFiles: []string{"/keys/id_ed25519"}, PassphraseEnv: "KEY_PASS",
		KnownHostsFiles: []string{"/keys/known_hosts"}, TrustOnFirstUse: true, ConnectTimeout: 3 * time.Second,
		Jump: []sshrun.Config{
			{Name: "outer", Address: "bastion.example", Port: 22, PassphraseFile: "/keys/pass"},
			{Name: "inner", Address: "10.0.0.1", Port: 22, UseAgent: true,
				PinnedHostKeys: []string{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeFakeFakeFakeFakeFakeFakeFakeFakeFakeFake"}},
		},
	}, cfg)
}
