package sshrun

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrClosed is returned by an SSH runner (or Pool) used after Close.
var ErrClosed = errors.New("ssh connection is closed")

// liveConn is a connection plus a signal that it has gone away.
type liveConn struct {
	*sshConn
	dead chan struct{}

	// filesMu guards files, the connection's SFTP session once opened.
	filesMu sync.Mutex
	files   *fileSession
	// busMu guards bus, the connection's kept systemd bus once opened.
	busMu sync.Mutex
	bus   *busSession

	// users counts the uses in progress (a command, a file or unit read, an
	// open tunnel, a shared shell); idle is the timer that retires the
	// connection once none has been for the runner's idle timeout, and
	// idleGen tells a timer that fired late from the current one. All
	// three are guarded by the runner's mu.
	users   int
	idle    *time.Timer
	idleGen uint64
}

func (c *liveConn) isDead() bool {
	select {
	case <-c.dead:
		return true
	default:
		return false
	}
}

// dialCall is one dial that concurrent callers wait for together.
type dialCall struct {
	done chan struct{}
	conn *liveConn
	err  error
}

// Connect dials the host now, unless a healthy connection exists, so that
// unreachable hosts and host key problems surface before any step runs.
func (s *Runner) Connect(ctx context.Context) error {
	c, err := s.use(ctx)
	if err != nil {
		return err
	}
	s.done(c)
	return nil
}

// use returns the current connection, dialing when there is none or it
// broke, and counts one use of it: until the caller ends the use with
// s.done, the idle timeout cannot retire it.
func (s *Runner) use(ctx context.Context) (*liveConn, error) {
	for {
		c, err := s.connection(ctx)
		if err != nil {
			return nil, err
		}
		s.mu.Lock()
		if s.conn == c {
			c.users++
			if c.idle != nil {
				c.idle.Stop()
				c.idle = nil
			}
			s.mu.Unlock()
			return c, nil
		}
		s.mu.Unlock()
		// Retired or forgotten between the dial and this use: the next
		// round dials again, or says the runner is closed.
	}
}

// done ends one use of c. The last one starts the idle timer, when the
// runner has an idle timeout.
func (s *Runner) done(c *liveConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c.users--
	if c.users > 0 || s.idleTimeout <= 0 || s.conn != c {
		return
	}
	c.idleGen++
	gen := c.idleGen
	c.idle = time.AfterFunc(s.idleTimeout, func() { s.retire(c, gen) })
}

// retire closes c after it went unused for the idle timeout, unless a use
// began since (or began and ended, starting a later timer). Callers that
// come after find no connection and dial a new one.
func (s *Runner) retire(c *liveConn, gen uint64) {
	s.mu.Lock()
	if s.conn != c || c.users > 0 || c.idleGen != gen {
		s.mu.Unlock()
		return
	}
	s.conn = nil
	c.idle = nil
	s.retired++
	s.mu.Unlock()
	// Nothing uses it; its end needs no report.
	_ = c.Close()
}

// Retired says how many connections were closed for going unused for the
// idle timeout.
func (s *Runner) Retired() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.retired
}

// Connected says whether the runner holds a live connection now.
func (s *Runner) Connected() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conn != nil && !s.conn.isDead()
}

// connection returns the current connection, dialing when there is none or
// it broke. Concurrent callers share one dial. The dial itself is bounded by
// ConnectTimeout, not by the first caller's ctx, so that one impatient
// caller cannot fail the others; each caller stops waiting at its own ctx.
func (s *Runner) connection(ctx context.Context) (*liveConn, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	if s.conn != nil && !s.conn.isDead() {
		c := s.conn
		s.mu.Unlock()
		return c, nil
	}
	call := s.dialing
	if call == nil {
		call = &dialCall{done: make(chan struct{})}
		s.dialing = call
		go s.dial(call)
	}
	s.mu.Unlock()
	select {
	case <-call.done:
		return call.conn, call.err
	case <-ctx.Done():
		return nil, &ConnectError{Host: s.cfg.Name, Address: s.cfg.addr(), Err: fmt.Errorf("gave up waiting for the connection: %w", context.Cause(ctx))}
	}
}

func (s *Runner) dial(call *dialCall) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Close aborts a dial in progress.
	go func() {
		select {
		case <-s.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	start := time.Now()
	conn, err := dialSSH(ctx, s.cfg)
	if s.onDial != nil {
		s.onDial(DialEvent{Host: s.cfg.Name, Took: time.Since(start), Err: err})
	}
	var live *liveConn
	if err == nil {
		live = &liveConn{sshConn: conn, dead: make(chan struct{})}
		go func() {
			// How it ended does not matter: it is dead either way.
			_ = conn.client.Wait()
			// Close the jump hops too, or a reconnect would leak them.
			_ = conn.Close()
			close(live.dead)
		}()
		if s.cfg.KeepAlive > 0 {
			go keepAlive(live, s.cfg.KeepAlive)
		}
	}
	s.mu.Lock()
	s.dialing = nil
	if live != nil {
		if s.closed {
			_ = live.Close() // never used; ErrClosed is what to report
			live, err = nil, ErrClosed
		} else {
			s.conn = live
			s.dials++
		}
	}
	s.mu.Unlock()
	call.conn, call.err = live, err
	close(call.done)
}

// keepAlive probes the connection every interval and closes it when a probe
// goes unanswered for a whole interval, so that a host that vanished without
// a TCP reset is noticed and the next command reconnects instead of hanging.
func keepAlive(c *liveConn, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-c.dead:
			return
		case <-t.C:
		}
		reply := make(chan error, 1)
		go func() {
			// OpenSSH answers unknown global requests with a failure, which
			// is a reply all the same; only a missing reply matters.
			_, _, err := c.client.SendRequest("keepalive@openssh.com", true, nil)
			reply <- err
		}()
		select {
		case err := <-reply:
			if err != nil {
				_ = c.Close() // already broken; closing marks it dead
				return
			}
		case <-t.C:
			_ = c.Close() // unanswered; closing marks it dead
			return
		case <-c.dead:
			return
		}
	}
}

// forget drops c as the current connection after a failure that shows it is
// unusable, so the next caller redials.
func (s *Runner) forget(c *liveConn) {
	_ = c.Close() // it is unusable already
	s.mu.Lock()
	if s.conn == c {
		s.conn = nil
	}
	s.mu.Unlock()
}

// Close closes the connection and stops any dial in progress. Commands still
// running fail.
func (s *Runner) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.closing)
	c := s.conn
	s.conn = nil
	if c != nil && c.idle != nil {
		c.idle.Stop()
		c.idle = nil
	}
	s.mu.Unlock()
	if c != nil {
		// An error here only says the connection had already broken, which
		// is no reason to bother the caller.
		_ = c.Close()
	}
	return nil
}
