package remote

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/stretchr/testify/require"
)

// countingConn counts the writes and reads that reach the socket.
type countingConn struct {
	net.Conn
	mu            sync.Mutex
	writes, reads int
}

func (c *countingConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	c.reads++
	c.mu.Unlock()
	return c.Conn.Read(p)
}

func (c *countingConn) readCount() int { c.mu.Lock(); defer c.mu.Unlock(); return c.reads }

func (c *countingConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.writes++
	c.mu.Unlock()
	return c.Conn.Write(p)
}

func (c *countingConn) count() int { c.mu.Lock(); defer c.mu.Unlock(); return c.writes }

// TestShowUnitSendsItsCallsInOneWrite: over a transport that holds writes
// (the SSH-forwarded bus), a unit read reaches the socket as one write,
// where each of its calls was one; the answer is the same either way. A
// real dbus-daemon routes the calls to the fake systemd.
func TestShowUnitSendsItsCallsInOneWrite(t *testing.T) {
	addr := startBus(t)
	startFakeSystemd(t, addr)
	sock, err := net.Dial("unix", strings.TrimPrefix(strings.Split(addr, ",")[0], "unix:path="))
	require.NoError(t, err)
	counted := &countingConn{Conn: sock}
	writes := &HeldWrites{Conn: counted}
	conn, err := dbus.NewConn(writes)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	require.NoError(t, conn.Auth(nil))
	require.NoError(t, conn.Hello())
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()

	for _, tc := range []struct {
		name   string
		writes *HeldWrites
		want   int
	}{
		{"each call its own write", nil, len(ShowProperties)},
		{"held: one write", writes, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := counted.count()
			st, err := ShowUnitOnBus(ctx, conn, tc.writes, "gpu-node-01", "sglang-dsv4-decode")
			require.NoError(t, err)
			require.Equal(t, tc.want, counted.count()-before)
			require.Equal(t, "active", st.ActiveState)
			require.Equal(t, 100, st.MainPID)
		})
	}
}

// TestHeldWritesNest: writes made while any hold lasts go out together
// when the last one ends; writes outside a hold go out at once.
func TestHeldWritesNest(t *testing.T) {
	a, b := net.Pipe()
	t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
	counted := &countingConn{Conn: a}
	w := &HeldWrites{Conn: counted}
	got := make(chan string, 4)
	go func() {
		buf := make([]byte, 64)
		for {
			n, err := b.Read(buf)
			if err != nil {
				return
			}
			got <- string(buf[:n])
		}
	}()
	receive := func() string {
		select {
		case s := <-got:
			return s
		case <-time.After(10 * time.Second):
			t.Fatal("nothing arrived")
			return ""
		}
	}

	w.Hold()
	w.Hold()
	for _, s := range []string{"a", "b", "c"} {
		n, err := w.Write([]byte(s))
		require.NoError(t, err)
		require.Equal(t, 1, n)
	}
	require.NoError(t, w.Release())
	require.Zero(t, counted.count(), "one hold is left")
	require.NoError(t, w.Release())
	require.Equal(t, "abc", receive())
	require.Equal(t, 1, counted.count())

	_, err := w.Write([]byte("d"))
	require.NoError(t, err)
	require.Equal(t, "d", receive())
	require.Equal(t, 2, counted.count())
}
