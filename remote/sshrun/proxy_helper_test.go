package sshrun_test

import (
	"io"
	"net"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// freezableProxy forwards TCP connections to a target and can freeze the
// ones it already carries: bytes stop flowing both ways but nothing is
// closed, as when a host drops off the network. New connections still work.
type freezableProxy struct {
	port   int
	mu     sync.Mutex
	frozen map[net.Conn]chan struct{}
}

func startFreezableProxy(t *testing.T, target string) *freezableProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &freezableProxy{port: l.Addr().(*net.TCPAddr).Port, frozen: map[net.Conn]chan struct{}{}}
	var conns []net.Conn
	t.Cleanup(func() { // test cleanup: errors do not matter
		_ = l.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	go func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				_ = in.Close() // the target is down: drop the client
				continue
			}
			freeze := make(chan struct{})
			p.mu.Lock()
			conns = append(conns, in, out)
			p.frozen[in] = freeze
			p.mu.Unlock()
			go p.pump(out, in, freeze)
			go p.pump(in, out, freeze)
		}
	}()
	return p
}

func (p *freezableProxy) pump(dst, src net.Conn, freeze chan struct{}) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		select {
		case <-freeze:
			// Frozen: swallow everything and never answer.
			_, _ = io.Copy(io.Discard, src) // ends when the connection does
			return
		default:
		}
		if n > 0 {
			if _, err := dst.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			_ = dst.Close() // pass the end on
			return
		}
	}
}

func (p *freezableProxy) freezeExisting() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c, ch := range p.frozen {
		close(ch)
		delete(p.frozen, c)
	}
}
