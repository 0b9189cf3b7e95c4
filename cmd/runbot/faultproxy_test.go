package main

import (
	"net"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// cutProxy forwards TCP connections to a server, and fails the path between
// the two in one of two ways: cut closes every connection and refuses new
// ones, as a stopped server does (the client sees a reset at once);
// blackhole stops moving bytes either way while every connection stays
// open, as a network path that drops packets does (the client sees
// nothing, and must notice by its own timeouts). heal ends either; bytes
// held by a blackhole then flow in order, as TCP retransmits them.
type cutProxy struct {
	t       *testing.T
	addr    string
	network string
	target  string
	// done is closed when the test ends, to release what a blackhole holds.
	done chan struct{}

	mu    sync.Mutex
	down  bool
	conns []net.Conn
	// open is closed while bytes may flow; a blackhole replaces it with an
	// open channel that heal closes.
	open chan struct{}
}

func newCutProxy(t *testing.T, network, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &cutProxy{t: t, addr: ln.Addr().String(), network: network, target: target, done: make(chan struct{}), open: make(chan struct{})}
	close(p.open)
	t.Cleanup(func() {
		_ = ln.Close()
		close(p.done)
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, c := range p.conns {
			_ = c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	return p
}

// gate waits while the path is blackholed; false means the test is over.
func (p *cutProxy) gate() bool {
	p.mu.Lock()
	open := p.open
	p.mu.Unlock()
	select {
	case <-open:
		return true
	case <-p.done:
		return false
	}
}

func (p *cutProxy) serve(c net.Conn) {
	p.mu.Lock()
	if p.down {
		p.mu.Unlock()
		_ = c.Close() // refused, as by a stopped server
		return
	}
	p.conns = append(p.conns, c)
	p.mu.Unlock()
	// A connection made while the path is blackholed hears nothing, as
	// when its SYN is dropped: the server never sees it until the heal.
	if !p.gate() {
		return
	}
	s, err := net.Dial(p.network, p.target)
	if err != nil {
		_ = c.Close()
		return
	}
	p.mu.Lock()
	p.conns = append(p.conns, s)
	p.mu.Unlock()
	go p.pipe(s, c)
	p.pipe(c, s)
}

// pipe copies src to dst while the path is open, and passes src's end on
// to dst (also only while open: a FIN is a packet too).
func (p *cutProxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		// Not reading while blackholed leaves the bytes in the kernel's
		// buffers, then the sender's: nothing is lost, nothing arrives.
		if !p.gate() {
			return
		}
		n, err := src.Read(buf)
		if n > 0 {
			if !p.gate() {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	if p.gate() {
		_ = dst.Close()
	}
}

// cut closes every connection and refuses new ones.
func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}

// blackhole stops every byte, both ways, on every connection and on new
// ones, closing nothing.
func (p *cutProxy) blackhole() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.open:
		p.open = make(chan struct{})
	default: // already blackholed
	}
}

// heal ends a cut or a blackhole.
func (p *cutProxy) heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
	select {
	case <-p.open:
	default:
		close(p.open)
	}
}
