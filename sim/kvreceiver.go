package sim

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// kvReceiverEvents is what the decode scheduler learns from the transfer engine.
type kvReceiverEvents interface {
	kvArrived(room uint64, bytes int)
	kvFailed(room uint64, reason string)
	sessionLost(s *kvSession)
}

// kvReceiver is the decode side of the transfer engine: one session per prefill
// bootstrap address, dialled on first use and re-dialled after it breaks.
type kvReceiver struct {
	mu       sync.Mutex
	sessions map[string]*kvSession
	events   kvReceiverEvents
}

// kvSession is one live connection to a prefill bootstrap port.
type kvSession struct {
	addr string
	conn net.Conn
	w    *kvWriter
}

func newKVReceiver(ev kvReceiverEvents) *kvReceiver {
	return &kvReceiver{sessions: map[string]*kvSession{}, events: ev}
}

// session returns the live session to addr, dialling it if needed.
func (k *kvReceiver) session(ctx context.Context, addr string) (*kvSession, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if s, ok := k.sessions[addr]; ok {
		return s, nil
	}
	// The session outlives the request that happens to open it, so that
	// request going away does not cut its dial short.
	conn, err := (&net.Dialer{Timeout: 2 * time.Second}).DialContext(context.WithoutCancel(ctx), "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("connect to prefill bootstrap %s: %w", addr, err)
	}
	s := &kvSession{addr: addr, conn: conn, w: newKVWriter(conn)}
	k.sessions[addr] = s
	go k.read(s)
	return s, nil
}

// read consumes frames from prefill until the session breaks.
func (k *kvReceiver) read(s *kvSession) {
	r := bufio.NewReaderSize(s.conn, 64<<10)
	for {
		f, err := readKVFrame(r)
		if err == nil && f.op == kvData {
			// The payload is really read off the socket: this is the data plane.
			_, err = io.CopyN(io.Discard, r, int64(f.n))
		}
		if err != nil {
			k.drop(s)
			k.events.sessionLost(s)
			return
		}
		switch f.op {
		case kvData:
			k.events.kvArrived(f.room, f.n)
		case kvFail:
			k.events.kvFailed(f.room, f.reason)
		}
	}
}

func (k *kvReceiver) drop(s *kvSession) {
	k.mu.Lock()
	if k.sessions[s.addr] == s {
		delete(k.sessions, s.addr)
	}
	k.mu.Unlock()
	s.w.close()
	_ = s.conn.Close()
}

// send writes a control frame; a failure breaks the session so the next request
// re-dials.
func (k *kvReceiver) send(s *kvSession, op string, room uint64) error {
	if err := s.w.send(op, room, "", nil); err != nil {
		k.drop(s)
		return err
	}
	return nil
}

// close tears down every session, as a dying decode process would.
func (k *kvReceiver) close() {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, s := range k.sessions {
		s.w.close()
		_ = s.conn.Close()
	}
}
