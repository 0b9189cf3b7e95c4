package sshrun_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/sshdtest"
	"github.com/runbot/runbot/remote"
	"github.com/runbot/runbot/remote/sshrun"
)

// userConfig fills testdata/ssh_config for the given servers.
func userConfig(t *testing.T, target, bastion *sshdtest.Server) string {
	t.Helper()
	tmpl, err := os.ReadFile("testdata/ssh_config")
	require.NoError(t, err)
	// Both servers share one known_hosts file, as on an operator's laptop.
	known := filepath.Join(t.TempDir(), "known_hosts")
	require.NoError(t, os.WriteFile(known, []byte(target.KnownHostsLine()+"\n"+bastion.KnownHostsLine()+"\n"), 0o600))
	// One client key for both: authorize the target's key on the bastion.
	body := strings.NewReplacer(
		"{target_port}", portOf(target), "{bastion_port}", portOf(bastion),
		"{key}", target.ClientKeyFile, "{known_hosts}", known, "{user}", target.User,
	).Replace(string(tmpl))
	return writeFile(t, "config", body)
}

func TestFillFromUserConfig(t *testing.T) {
	target := sshdtest.Start(t, sshdtest.Options{})
	bastion := sshdtest.Start(t, sshdtest.Options{AuthorizedKeys: []string{target.ClientPublicKey}})
	path := userConfig(t, target, bastion)

	cfg, err := sshrun.Config{Name: "web1"}.FillFromUserConfig(path)
	require.NoError(t, err)

	home, _ := os.UserHomeDir()
	require.Equal(t, "127.0.0.1", cfg.Address)
	require.Equal(t, target.Port, cfg.Port)
	require.Equal(t, target.User, cfg.User)
	require.Equal(t, []string{target.ClientKeyFile}, cfg.IdentityFiles)
	require.Equal(t, filepath.Join(home, ".ssh/known_hosts2"), cfg.KnownHostsFiles[1])
	require.Equal(t, 7*time.Second, cfg.ConnectTimeout)
	require.Equal(t, 9*time.Second, cfg.KeepAlive)
	require.Len(t, cfg.Jump, 1)
	require.Equal(t, "bastion", cfg.Jump[0].Name)
	require.Equal(t, bastion.Port, cfg.Jump[0].Port)

	// The filled config works end to end, through the jump host.
	out, err := newSSH(t, cfg).Run(testCtx(t), remote.Command{Line: "echo configured"})
	require.NoError(t, err)
	require.Equal(t, "configured\n", string(out.Stdout))
	require.Contains(t, bastion.Log(), "Accepted publickey")
}

func TestFillFromUserConfigKeepsSetFields(t *testing.T) {
	path := writeFile(t, "config", "Host web1\n  HostName 10.1.1.1\n  User fromfile\n  Port 2200\n  ProxyJump bastion\n")
	cfg, err := sshrun.Config{Name: "web1", User: "explicit", Port: 22}.FillFromUserConfig(path)
	require.NoError(t, err)
	require.Equal(t, "10.1.1.1", cfg.Address, "unset fields are filled")
	require.Equal(t, "explicit", cfg.User)
	require.Equal(t, 22, cfg.Port)
}

func TestFillFromUserConfigProxyJumpForms(t *testing.T) {
	path := writeFile(t, "config", "Host multi\n  HostName db.internal\n  ProxyJump alice@jump1.example:2200,ssh://bob@[2001:db8::1]:22\n")
	cfg, err := sshrun.Config{Name: "multi"}.FillFromUserConfig(path)
	require.NoError(t, err)
	require.Equal(t, "db.internal", cfg.Address)
	require.Equal(t, []sshrun.Config{
		{Name: "jump1.example", User: "alice", Port: 2200},
		{Name: "2001:db8::1", User: "bob", Port: 22},
	}, cfg.Jump)
}

func TestFillFromUserConfigFiles(t *testing.T) {
	_, err := sshrun.Config{Name: "web1"}.FillFromUserConfig(filepath.Join(t.TempDir(), "missing"))
	require.ErrorContains(t, err, "read ssh config")

	t.Setenv("HOME", t.TempDir()) // no ~/.ssh/config: nothing to fill, no error
	cfg, err := sshrun.Config{Name: "web1"}.FillFromUserConfig("")
	require.NoError(t, err)
	require.Equal(t, sshrun.Config{Name: "web1"}, cfg)
}
