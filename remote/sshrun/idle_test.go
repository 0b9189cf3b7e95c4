package sshrun_test

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/sshdtest"
	"github.com/runbot/runbot/remote"
	"github.com/runbot/runbot/remote/sshrun"
)

// idleTimeout is the knob under test, short so that the test is quick; what
// it shows holds at serve's default too.
const idleTimeout = 300 * time.Millisecond

// idlePool returns the runner for srv, connected, of a pool that retires
// connections idle for idleTimeout.
func idlePool(t *testing.T, srv *sshdtest.Server) *sshrun.Runner {
	t.Helper()
	pool := sshrun.NewPool()
	pool.IdleTimeout = idleTimeout
	t.Cleanup(func() { _ = pool.Close() }) // test cleanup
	s, err := pool.Get(testCtx(t), hostConfig(t, srv))
	require.NoError(t, err)
	return s
}

// requireRetired waits until the runner closed its connection for being
// idle, and checks that sshd saw the client go.
func requireRetired(t *testing.T, s *sshrun.Runner, srv *sshdtest.Server, times int) {
	t.Helper()
	require.Eventually(t, func() bool { return s.Retired() == times }, 20*time.Second, 10*time.Millisecond,
		"the idle connection was not closed")
	require.False(t, s.Connected())
	require.Eventually(t, func() bool { return strings.Count(srv.Log(), "Connection closed by") >= times },
		20*time.Second, 10*time.Millisecond, "sshd did not see the idle client leave:\n%s", srv.Log())
}

// outlast waits past the idle timeout while something holds the
// connection, so that a wrongful close would have happened.
func outlast() { time.Sleep(3 * idleTimeout) }

func TestPoolClosesConnectionsLeftIdle(t *testing.T) {
	t.Run("after a command", func(t *testing.T) {
		srv := sshdtest.Start(t, sshdtest.Options{})
		s := idlePool(t, srv)
		out, err := s.Run(testCtx(t), remote.Command{Line: "echo one"})
		require.NoError(t, err)
		require.Equal(t, "one\n", string(out.Stdout))
		requireRetired(t, s, srv, 1)

		// The next use dials again, transparently.
		out, err = s.Run(testCtx(t), remote.Command{Line: "echo two"})
		require.NoError(t, err)
		require.Equal(t, "two\n", string(out.Stdout))
		require.Equal(t, 2, s.Dials())
		requireRetired(t, s, srv, 2)
	})

	t.Run("never under a command that outlasts the timeout", func(t *testing.T) {
		srv := sshdtest.Start(t, sshdtest.Options{})
		s := idlePool(t, srv)
		out, err := s.Run(testCtx(t), remote.Command{Line: "sleep 1; echo done"})
		require.NoError(t, err)
		require.Equal(t, "done\n", string(out.Stdout))
		require.Equal(t, 0, s.Retired())
		require.Equal(t, 1, s.Dials())
		requireRetired(t, s, srv, 1)
	})

	t.Run("never while a tunnel is open", func(t *testing.T) {
		srv := sshdtest.Start(t, sshdtest.Options{})
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		t.Cleanup(func() { _ = ln.Close() }) // test cleanup
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go func() {
					defer func() { _ = c.Close() }() // echo server of the test
					buf := make([]byte, 64)
					for {
						n, err := c.Read(buf)
						if err != nil {
							return
						}
						_, _ = c.Write(buf[:n])
					}
				}()
			}
		}()
		s := idlePool(t, srv)
		tun, err := s.DialContext(testCtx(t), "tcp", ln.Addr().String())
		require.NoError(t, err)
		outlast()
		require.Equal(t, 0, s.Retired())
		// The tunnel still carries bytes.
		_, err = tun.Write([]byte("ping"))
		require.NoError(t, err)
		buf := make([]byte, 4)
		require.NoError(t, tun.SetReadDeadline(time.Now().Add(10*time.Second)))
		_, err = tun.Read(buf)
		require.NoError(t, err)
		require.Equal(t, "ping", string(buf))
		require.NoError(t, tun.Close())
		requireRetired(t, s, srv, 1)
		require.NoError(t, tun.Close(), "a second close releases nothing twice")
	})

	t.Run("never while a shared shell is open", func(t *testing.T) {
		srv := sshdtest.Start(t, sshdtest.Options{})
		s := idlePool(t, srv)
		sh := sshrun.NewShell(s)
		out, err := sh.Run(testCtx(t), remote.Command{Line: "echo shared"})
		require.NoError(t, err)
		require.Equal(t, "shared\n", string(out.Stdout))
		outlast()
		require.Equal(t, 0, s.Retired())
		out, err = sh.Run(testCtx(t), remote.Command{Line: "echo again"})
		require.NoError(t, err)
		require.Equal(t, "again\n", string(out.Stdout))
		require.Equal(t, 1, s.Dials())
		require.NoError(t, sh.Close())
		requireRetired(t, s, srv, 1)
	})

	t.Run("after file reads, with the sftp session", func(t *testing.T) {
		srv := sshdtest.Start(t, sshdtest.Options{})
		s := idlePool(t, srv)
		f, err := remote.ReadFile(testCtx(t), s, remote.FileRead{Path: "/proc/loadavg"})
		require.NoError(t, err)
		require.Len(t, strings.Fields(string(f.Data)), 5)
		requireRetired(t, s, srv, 1)
		f, err = remote.ReadFile(testCtx(t), s, remote.FileRead{Path: "/proc/loadavg"})
		require.NoError(t, err)
		require.Len(t, strings.Fields(string(f.Data)), 5)
		require.Equal(t, 2, s.Dials())
	})

	t.Run("not at all without a timeout", func(t *testing.T) {
		srv := sshdtest.Start(t, sshdtest.Options{})
		pool := sshrun.NewPool()
		t.Cleanup(func() { _ = pool.Close() }) // test cleanup
		s, err := pool.Get(testCtx(t), hostConfig(t, srv))
		require.NoError(t, err)
		_, err = s.Run(testCtx(t), remote.Command{Line: "true"})
		require.NoError(t, err)
		outlast()
		require.True(t, s.Connected())
		require.Equal(t, 0, s.Retired())
	})
}
