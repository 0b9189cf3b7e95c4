package remote

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/stretchr/testify/require"
)

// TestShowUnitReadsItsRepliesInFewReads: over buffered reads, a unit
// read's replies take at most a socket read each, where godbus alone reads
// each field of each reply on its own; the answer is the same either way.
// A real dbus-daemon routes the calls to the fake systemd.
func TestShowUnitReadsItsRepliesInFewReads(t *testing.T) {
	addr := startBus(t)
	startFakeSystemd(t, addr)
	path := strings.TrimPrefix(strings.Split(addr, ",")[0], "unix:path=")
	for _, tc := range []struct {
		name     string
		buffered bool
		atLeast  int
		atMost   int
	}{
		{"godbus reads field by field", false, 5 * len(ShowProperties), 1 << 20},
		// A reply that reaches the socket in two pieces (the daemon was
		// preempted while writing it, as on a busy machine) costs a second
		// read; that is still a read a reply, not one a field.
		{"buffered: about a read a reply at most", true, 1, len(ShowProperties) + 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sock, err := net.Dial("unix", path)
			require.NoError(t, err)
			counted := &countingConn{Conn: sock}
			var transport net.Conn = counted
			if tc.buffered {
				transport = NewBufferedReads(counted)
			}
			writes := &HeldWrites{Conn: transport}
			conn, err := dbus.NewConn(writes)
			require.NoError(t, err)
			t.Cleanup(func() { _ = conn.Close() })
			require.NoError(t, conn.Auth(nil))
			require.NoError(t, conn.Hello())
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()

			before := counted.readCount()
			st, err := ShowUnitOnBus(ctx, conn, writes, "gpu-node-01", "sglang-dsv4-decode")
			require.NoError(t, err)
			reads := counted.readCount() - before
			t.Logf("%d socket reads for %d replies", reads, len(ShowProperties))
			require.GreaterOrEqual(t, reads, tc.atLeast)
			require.LessOrEqual(t, reads, tc.atMost)
			require.Equal(t, "active", st.ActiveState)
			require.Equal(t, 100, st.MainPID)
		})
	}
}
