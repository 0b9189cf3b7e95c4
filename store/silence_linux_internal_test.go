package store

import (
	"net"
	"testing"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/runbot/runbot/store/internal/pgtest"
)

// The store's connections to a PostgreSQL server over TCP carry the
// settings that notice a silent server (noticeSilence): keepalive probes
// after keepAliveIdle, keepAliveCount of them keepAliveInterval apart, and
// TCP_USER_TIMEOUT. What they do on a silent network is shown end to end
// (TestReplicasAcrossHosts, a primary's host losing power); here, that
// every connection the pool opens has them.
func TestConnectionsNoticeSilence(t *testing.T) {
	p := pgtest.NewPair(t) // its nodes listen on TCP; the binary's cluster only on a socket
	s, err := OpenPostgres(t.Context(), p.Primary.DSN())
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() }) // test cleanup
	c, err := s.db.Conn(t.Context())
	require.NoError(t, err)
	defer func() { _ = c.Close() }() // back to the pool
	var nc net.Conn
	require.NoError(t, c.Raw(func(dc any) error {
		nc = dc.(*stdlib.Conn).Conn().PgConn().Conn()
		return nil
	}))
	tcp, ok := nc.(*net.TCPConn)
	require.True(t, ok, "a TCP connection, not %T", nc)
	raw, err := tcp.SyscallConn()
	require.NoError(t, err)
	got := map[string]int{}
	require.NoError(t, raw.Control(func(fd uintptr) {
		for name, opt := range map[string][2]int{
			"SO_KEEPALIVE": {unix.SOL_SOCKET, unix.SO_KEEPALIVE}, "TCP_KEEPIDLE": {unix.IPPROTO_TCP, unix.TCP_KEEPIDLE},
			"TCP_KEEPINTVL": {unix.IPPROTO_TCP, unix.TCP_KEEPINTVL}, "TCP_KEEPCNT": {unix.IPPROTO_TCP, unix.TCP_KEEPCNT},
			"TCP_USER_TIMEOUT": {unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT},
		} {
			v, err := unix.GetsockoptInt(int(fd), opt[0], opt[1])
			require.NoError(t, err, name)
			got[name] = v
		}
	}))
	require.Equal(t, map[string]int{
		"SO_KEEPALIVE": 1, "TCP_KEEPIDLE": int(keepAliveIdle.Seconds()), "TCP_KEEPINTVL": int(keepAliveInterval.Seconds()),
		"TCP_KEEPCNT": keepAliveCount, "TCP_USER_TIMEOUT": int(tcpUserTimeout.Milliseconds()),
	}, got)
}
