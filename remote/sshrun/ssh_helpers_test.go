package sshrun_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/sshdtest"
	"github.com/runbot/runbot/remote/sshrun"
)

// hostConfig returns a config that trusts srv through a known_hosts file and
// logs in with its client key.
func hostConfig(t *testing.T, srv *sshdtest.Server) sshrun.Config {
	t.Helper()
	return sshrun.Config{
		Name:            "web1",
		Address:         srv.Host,
		Port:            srv.Port,
		User:            srv.User,
		IdentityFiles:   []string{srv.ClientKeyFile},
		KnownHostsFiles: []string{srv.KnownHostsFile(t)},
	}
}

// newSSH returns a runner that is closed when the test ends.
func newSSH(t *testing.T, cfg sshrun.Config) *sshrun.Runner {
	t.Helper()
	s, err := sshrun.New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() }) // Runner.Close reports nothing
	return s
}

// testCtx bounds a test's remote work generously: a deadline that only a
// hang would reach.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}
