package remote_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/sshdtest"
	"github.com/runbot/runbot/remote"
)

func TestPoolConcurrentCallersShareOneDial(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{})
	pool := remote.NewPool()
	t.Cleanup(func() { _ = pool.Close() }) // test cleanup
	cfg := hostConfig(t, srv)

	runners := make([]*remote.SSH, 20)
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
	pool := remote.NewPool()
	t.Cleanup(func() { _ = pool.Close() }) // test cleanup
	named := func(name string, srv *sshdtest.Server) remote.SSHConfig {
		c := hostConfig(t, srv)
		c.Name = name
		return c
	}
	down := named("web3", a)
	down.Port = closedPort(t)
	unknownKey := named("web4", a)
	unknownKey.KnownHostsFiles = []string{filepath.Join(t.TempDir(), "known_hosts")}
	hosts := []remote.SSHConfig{named("web1", a), named("web2", b), down, unknownKey, named("web5", b)}

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
	var cerr *remote.ConnectError
	require.ErrorAs(t, results[2].Err, &cerr)
	require.ErrorContains(t, results[2].Err, "connection refused")
	var herr *remote.HostKeyError
	require.ErrorAs(t, results[3].Err, &herr)
	require.Equal(t, remote.HostKeyUnknown, herr.Kind)
}

func TestPoolReplacesRunnerWhenConfigChanges(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{})
	pool := remote.NewPool()
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
	require.ErrorIs(t, err, remote.ErrClosed)
	_, err = fresh.Run(testCtx(t), remote.Command{Line: "true"})
	require.NoError(t, err)
}

func TestPoolClose(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{})
	pool := remote.NewPool()
	cfg := hostConfig(t, srv)
	r, err := pool.Get(testCtx(t), cfg)
	require.NoError(t, err)

	require.NoError(t, pool.Close())

	_, err = r.Run(testCtx(t), remote.Command{Line: "true"})
	require.True(t, errors.Is(err, remote.ErrClosed), "got %v", err)
	_, err = pool.Get(testCtx(t), cfg)
	require.ErrorIs(t, err, remote.ErrClosed)
}

func closedPort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { _ = l.Close() }() // only the port was wanted
	return l.Addr().(*net.TCPAddr).Port
}
