package sshrun_test

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/sshdtest"
	"github.com/runbot/runbot/remote"
)

// TestTunnelReachesHostLoopback makes an ordinary http.Client talk to a
// server on the host's loopback through the SSH connection.
func TestTunnelReachesHostLoopback(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{})
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "healthy "+r.URL.Path)
	}))
	t.Cleanup(web.Close)
	s := newSSH(t, hostConfig(t, srv))
	client := &http.Client{Transport: &http.Transport{DialContext: s.DialContext}}
	t.Cleanup(client.CloseIdleConnections)

	for _, path := range []string{"/health", "/v1/models"} {
		resp, err := client.Get(web.URL + path)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close() // read to the end above
		require.NoError(t, err)
		require.Equal(t, "healthy "+path, string(body))
	}
	require.Equal(t, 1, s.Dials(), "tunnels share the command connection")
	require.Contains(t, srv.Log(), "Accepted publickey")
}

func TestTunnelDeadlines(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{})
	// A server that accepts and then says nothing, like a wedged engine.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = silent.Close() }) // test cleanup
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = c.Close() }) // test cleanup
		}
	}()
	s := newSSH(t, hostConfig(t, srv))

	c, err := s.DialContext(testCtx(t), "tcp", silent.Addr().String())
	require.NoError(t, err)
	defer func() { _ = c.Close() }() // test cleanup
	require.NoError(t, c.SetReadDeadline(time.Now().Add(50*time.Millisecond)))
	_, err = c.Read(make([]byte, 1))
	var nerr net.Error
	require.ErrorAs(t, err, &nerr)
	require.True(t, nerr.Timeout())
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)
}

func TestTunnelToClosedPort(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	s := newSSH(t, hostConfig(t, srv))

	_, err = s.DialContext(testCtx(t), "tcp", addr)
	require.ErrorContains(t, err, "open tunnel from web1 to "+addr)

	// The connection survives a refused tunnel.
	_, err = s.Run(testCtx(t), remote.Command{Line: "true"})
	require.NoError(t, err)
	require.Equal(t, 1, s.Dials())
}
