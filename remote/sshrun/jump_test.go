package sshrun_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/sshdtest"
	"github.com/runbot/runbot/remote"
	"github.com/runbot/runbot/remote/sshrun"
)

func jumpConfig(t *testing.T, name string, srv *sshdtest.Server) sshrun.Config {
	t.Helper()
	c := hostConfig(t, srv)
	c.Name = name
	return c
}

func TestJumpHostChain(t *testing.T) {
	first := sshdtest.Start(t, sshdtest.Options{})
	second := sshdtest.Start(t, sshdtest.Options{})
	target := sshdtest.Start(t, sshdtest.Options{})
	cfg := hostConfig(t, target)
	cfg.Jump = []sshrun.Config{jumpConfig(t, "bastion1", first), jumpConfig(t, "bastion2", second)}
	s := newSSH(t, cfg)

	out, err := s.Run(testCtx(t), remote.Command{Line: "echo via-jump"})
	require.NoError(t, err)
	require.Equal(t, "via-jump\n", string(out.Stdout))
	for name, srv := range map[string]*sshdtest.Server{"bastion1": first, "bastion2": second, "target": target} {
		require.Equal(t, 1, strings.Count(srv.Log(), "Accepted publickey"), "%s was not logged into exactly once", name)
	}
}

// TestJumpHostFailuresNameTheHop also shows that traffic really goes through
// the bastion: when the bastion forbids forwarding, the target is never
// reached.
func TestJumpHostFailuresNameTheHop(t *testing.T) {
	noForwarding := sshdtest.Start(t, sshdtest.Options{Config: []string{"AllowTcpForwarding no"}})
	target := sshdtest.Start(t, sshdtest.Options{})

	t.Run("forwarding refused", func(t *testing.T) {
		cfg := hostConfig(t, target)
		cfg.Jump = []sshrun.Config{jumpConfig(t, "bastion", noForwarding)}
		_, err := newSSH(t, cfg).Run(testCtx(t), remote.Command{Line: "true"})
		var cerr *sshrun.ConnectError
		require.ErrorAs(t, err, &cerr)
		require.Equal(t, "web1", cerr.Host)
		require.Empty(t, cerr.Via, "the bastion was fine; the target could not be reached through it")
		require.Contains(t, err.Error(), "prohibited")
		require.NotContains(t, target.Log(), "Accepted publickey")
	})

	t.Run("unknown bastion key", func(t *testing.T) {
		cfg := hostConfig(t, target)
		j := jumpConfig(t, "bastion", target)
		j.KnownHostsFiles = []string{writeFile(t, "known_hosts", "")}
		cfg.Jump = []sshrun.Config{j}
		_, err := newSSH(t, cfg).Run(testCtx(t), remote.Command{Line: "true"})
		var cerr *sshrun.ConnectError
		require.ErrorAs(t, err, &cerr)
		require.Contains(t, cerr.Via, "bastion")
		var herr *sshrun.HostKeyError
		require.ErrorAs(t, err, &herr)
		require.Equal(t, "bastion", herr.Host)
		require.NotContains(t, target.Log(), "Accepted publickey")
	})
}
