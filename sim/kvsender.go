package sim

import (
	"bufio"
	"errors"
	"net"
	"sync"
)

// kvSenderEvents is what the prefill scheduler learns from the transfer engine.
type kvSenderEvents interface {
	preallocated(room uint64, p *kvPeer)
	transferDone(room uint64)
	decodeAborted(room uint64)
	peerLost(p *kvPeer)
}

// kvSender is the prefill side of the transfer engine: it listens on the bootstrap
// port (--disaggregation-bootstrap-port) for decode sessions.
type kvSender struct {
	ln     net.Listener
	events kvSenderEvents
	mu     sync.Mutex
	peers  map[*kvPeer]struct{}
}

// kvPeer is one connected decode engine.
type kvPeer struct {
	conn net.Conn
	w    *kvWriter
}

func newKVSender(ln net.Listener, ev kvSenderEvents) *kvSender {
	return &kvSender{ln: ln, events: ev, peers: map[*kvPeer]struct{}{}}
}

// serve accepts decode sessions until the listener is closed.
func (k *kvSender) serve() {
	for {
		conn, err := k.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		p := &kvPeer{conn: conn, w: newKVWriter(conn)}
		k.mu.Lock()
		k.peers[p] = struct{}{}
		k.mu.Unlock()
		go k.read(p)
	}
}

func (k *kvSender) read(p *kvPeer) {
	r := bufio.NewReader(p.conn)
	for {
		f, err := readKVFrame(r)
		if err != nil {
			p.w.close()
			_ = p.conn.Close()
			k.mu.Lock()
			delete(k.peers, p)
			k.mu.Unlock()
			k.events.peerLost(p)
			return
		}
		switch f.op {
		case kvPrealloc:
			k.events.preallocated(f.room, p)
		case kvDone:
			k.events.transferDone(f.room)
		case kvAbort:
			k.events.decodeAborted(f.room)
		}
	}
}

// close stops accepting and drops every session.
func (k *kvSender) close() {
	_ = k.ln.Close()
	k.mu.Lock()
	defer k.mu.Unlock()
	for p := range k.peers {
		_ = p.conn.Close()
	}
}
