package sshrun_test

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/sshdtest"
	"github.com/runbot/runbot/remote"
	"github.com/runbot/runbot/remote/sshrun"
)

func TestPoolConcurrentCallersShareOneDial(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{})
	pool := sshrun.NewPool()
	t.Cleanup(func() { _ = pool.Close() }) // test cleanup
	cfg := hostConfig(t, srv)

	runners := make([]*sshrun.Runner, 20)
	errs := make([]error, 20)
	var wg sync.WaitGroup
	for i := range runners {
		wg.Go(func() { runners[i], errs[i] = pool.Get(testCtx(t), cfg) })
	}
	wg.Wait()
	for i := range runners {
		require.NoError(t, errs[i])
		require.Same(t, runners[0], runners[i])
	}
	require.Equal(t, 1, runners[0].Dials())
	require.Equal(t, 1, strings.Count(srv.Log(), "Accepted publickey"), "one login for twenty callers")
}

func TestPoolFanOutReportsEveryHost(t *testing.T) {
	a := sshdtest.Start(t, sshdtest.Options{})
	b := sshdtest.Start(t, sshdtest.Options{})
	pool := sshrun.NewPool()
	t.Cleanup(func() { _ = pool.Close() }) // test cleanup
	named := func(name string, srv *sshdtest.Server) sshrun.Config {
		c := hostConfig(t, srv)
		c.Name = name
		return c
	}
	down := named("web3", a)
	down.Port = closedPort(t)
	unknownKey := named("web4", a)
	unknownKey.KnownHostsFiles = []string{filepath.Join(t.TempDir(), "known_hosts")}
	hosts := []sshrun.Config{named("web1", a), named("web2", b), down, unknownKey, named("web5", b)}

	results := pool.FanOut(testCtx(t), hosts, 2, func(ctx context.Context, r remote.Runner) error {
		for i := range 5 {
			out, err := r.Run(ctx, remote.Command{Line: fmt.Sprintf("echo %d", i)})
			if err != nil {
				return err
			}
			if string(out.Stdout) != fmt.Sprintf("%d\n", i) {
				return fmt.Errorf("unexpected output %q", out.Stdout)
			}
		}
		return nil
	})

	require.Len(t, results, 5)
	for i, name := range []string{"web1", "web2", "web3", "web4", "web5"} {
		require.Equal(t, name, results[i].Host)
	}
	require.NoError(t, results[0].Err)
	require.NoError(t, results[1].Err)
	require.NoError(t, results[4].Err)
	var cerr *sshrun.ConnectError
	require.ErrorAs(t, results[2].Err, &cerr)
	require.ErrorContains(t, results[2].Err, "connection refused")
	var herr *sshrun.HostKeyError
	require.ErrorAs(t, results[3].Err, &herr)
	require.Equal(t, sshrun.HostKeyUnknown, herr.Kind)
}

func TestPoolReplacesRunnerWhenConfigChanges(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{})
	pool := sshrun.NewPool()
	t.Cleanup(func() { _ = pool.Close() }) // test cleanup
	cfg := hostConfig(t, srv)
	old, err := pool.Get(testCtx(t), cfg)
	require.NoError(t, err)
	same, err := pool.Get(testCtx(t), cfg)
	require.NoError(t, err)
	require.Same(t, old, same)

	cfg.ConnectTimeout = 3e9
	fresh, err := pool.Get(testCtx(t), cfg)
	require.NoError(t, err)
	require.NotSame(t, old, fresh)
	_, err = old.Run(testCtx(t), remote.Command{Line: "true"})
	require.ErrorIs(t, err, sshrun.ErrClosed)
	_, err = fresh.Run(testCtx(t), remote.Command{Line: "true"})
	require.NoError(t, err)
}

func TestPoolClose(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{})
	pool := sshrun.NewPool()
	cfg := hostConfig(t, srv)
	r, err := pool.Get(testCtx(t), cfg)
	require.NoError(t, err)

	require.NoError(t, pool.Close())

	_, err = r.Run(testCtx(t), remote.Command{Line: "true"})
	require.ErrorIs(t, err, sshrun.ErrClosed, "got %v", err)
	_, err = pool.Get(testCtx(t), cfg)
	require.ErrorIs(t, err, sshrun.ErrClosed)
}

func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { _ = l.Close() }() // only the port was wanted
	return l.Addr().(*net.TCPAddr).Port
}

// Every connection attempt of the pool's runners is reported with an
// outcome an operator can act on; the table walks one per outcome against
// real sshd servers.
func TestPoolReportsEveryDialWithItsOutcome(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{})
	other := sshdtest.Start(t, sshdtest.Options{}) // a different host key and client key
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closedPort := closed.Addr().(*net.TCPAddr).Port
	require.NoError(t, closed.Close()) // nothing listens there now

	cases := []struct {
		name    string
		edit    func(*sshrun.Config)
		outcome string
	}{
		{"ok", func(*sshrun.Config) {}, "ok"},
		{"changed host key", func(c *sshrun.Config) { c.KnownHostsFiles = []string{other.KnownHostsFile(t)}; c.Port = srv.Port }, "host_key"},
		{"key not authorized", func(c *sshrun.Config) { c.IdentityFiles = []string{other.ClientKeyFile} }, "auth"},
		{"nothing listening", func(c *sshrun.Config) { c.Port = closedPort }, "unreachable"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var events []sshrun.DialEvent
			pool := sshrun.NewPool()
			pool.OnDial = func(e sshrun.DialEvent) { mu.Lock(); events = append(events, e); mu.Unlock() }
			t.Cleanup(func() { _ = pool.Close() }) // test cleanup
			cfg := hostConfig(t, srv)
			tc.edit(&cfg)
			_, err := pool.Get(testCtx(t), cfg)
			require.Equal(t, tc.outcome == "ok", err == nil, "dial error: %v", err)
			mu.Lock()
			defer mu.Unlock()
			require.Len(t, events, 1)
			require.Equal(t, "web1", events[0].Host)
			require.Equal(t, tc.outcome, events[0].Outcome(), "error: %v", events[0].Err)
			require.Positive(t, events[0].Took)
		})
	}
}
