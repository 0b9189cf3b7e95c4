package sshrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	"golang.org/x/crypto/ssh"
)

// DialContext implements Runner: it opens a direct-tcpip tunnel (or, for
// network "unix", a stream-local one) through the host's connection, so
// addr is resolved and reached as the host sees it, loopback included.
// The returned connection supports deadlines.
func (s *Runner) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	for attempt := 0; ; attempt++ {
		conn, err := s.use(ctx)
		if err != nil {
			return nil, err
		}
		c, err := conn.client.DialContext(ctx, network, addr)
		if err == nil {
			// The tunnel is a use of the connection until it is closed.
			t := withDeadlines(c)
			t.release = sync.OnceFunc(func() { s.done(conn) })
			return t, nil
		}
		s.done(conn)
		var refused *ssh.OpenChannelError
		if ctx.Err() != nil || errors.As(err, &refused) || attempt > 0 {
			return nil, fmt.Errorf("open tunnel from %s to %s: %w", s.cfg.Name, addr, err)
		}
		// The connection had broken: opening a tunnel changes nothing on
		// the host, so one retry on a fresh connection is safe.
		s.forget(conn)
	}
}

// tunnelConn is the user's end of a net.Pipe whose other end is pumped to
// and from an SSH channel. x/crypto's channel connections reject deadlines,
// which HTTP clients and probes rely on; a pipe supports them.
type tunnelConn struct {
	net.Conn
	local, remote net.Addr
	// release, when set, ends the tunnel's use of its SSH connection.
	release func()
}

// Close implements net.Conn; the SSH connection may go idle after it.
func (c *tunnelConn) Close() error {
	err := c.Conn.Close()
	if c.release != nil {
		c.release()
	}
	return err
}

func (c *tunnelConn) LocalAddr() net.Addr  { return c.local }
func (c *tunnelConn) RemoteAddr() net.Addr { return c.remote }

func withDeadlines(ch net.Conn) *tunnelConn {
	user, inner := net.Pipe()
	// Each pump ends when its source closes or fails; closing the other side
	// is how that reaches the user, so the errors themselves are not needed.
	go func() {
		_, _ = io.Copy(ch, inner)
		_ = ch.Close()
	}()
	go func() {
		_, _ = io.Copy(inner, ch)
		_ = inner.Close()
	}()
	return &tunnelConn{Conn: user, local: ch.LocalAddr(), remote: ch.RemoteAddr()}
}
