package sshrun

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/runbot/runbot/remote"
)

// Shell is a Runner that multiplexes commands over one long-lived SSH
// session per host: a small POSIX sh driver (see shellDriver) runs each
// command as a background job, so concurrent and successive commands share
// the session instead of each paying for a new one (on OpenSSH a session
// costs the host a forked sshd child, PAM and a login shell). Every command
// keeps what Runner.Run gives it: its own exit status, stdout and stderr
// capped apart, its timeout and the kill of its process tree.
//
// Commands with Stdin go to a dedicated session through the SSH runner,
// as do DialContext tunnels. The session is opened on first use and
// reopened after it dies; Close ends it. Shell is safe for concurrent use.
type Shell struct {
	ssh *Runner
	// opening is a one-slot lock held while a session starts, so that
	// concurrent first commands share one session.
	opening chan struct{}

	mu     sync.Mutex
	cur    *shellSession
	closed bool
}

// NewShell returns a multiplexed shell over r's connection. It does not
// dial or open a session.
func NewShell(r *Runner) *Shell {
	return &Shell{ssh: r, opening: make(chan struct{}, 1)}
}

// Host implements Runner.
func (s *Shell) Host() string { return s.ssh.Host() }

// DialContext implements Runner through the SSH runner.
func (s *Shell) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	return s.ssh.DialContext(ctx, network, addr)
}

// ReadFile implements FileReader through the SSH runner's SFTP session.
func (s *Shell) ReadFile(ctx context.Context, path string, max int) (remote.File, error) {
	return s.ssh.ReadFile(ctx, path, max)
}

// Close ends the shell's session, if any; commands still in flight fail
// with ErrConnectionLost. The SSH runner stays open: it is the caller's.
func (s *Shell) Close() error {
	s.mu.Lock()
	s.closed = true
	cur := s.cur
	s.cur = nil
	s.mu.Unlock()
	if cur != nil {
		cur.close()
	}
	return nil
}

// Run implements Runner. As with Runner.Run, a non-zero exit is reported in
// Output.ExitCode (128+n for signal n); at ctx's deadline the command's
// process tree is killed, through the session, and the error is a
// *TimeoutError; when the session or connection dies every command in
// flight fails with ErrConnectionLost and the next one opens a new session.
func (s *Shell) Run(ctx context.Context, cmd remote.Command) (remote.Output, error) {
	if cmd.Stdin != nil {
		return s.ssh.Run(ctx, cmd)
	}
	start := time.Now()
	timedOut := func(out remote.Output) (remote.Output, error) {
		out.Duration = time.Since(start)
		return out, &remote.TimeoutError{Host: s.Host(), Command: cmd.Line, After: out.Duration, Cause: context.Cause(ctx)}
	}
	if strings.IndexByte(cmd.Line, 0) >= 0 {
		return remote.Output{}, fmt.Errorf("run command on %s: the command line holds a NUL byte, which no shell can run", s.Host())
	}
	if ctx.Err() != nil {
		return timedOut(remote.Output{})
	}
	ss, err := s.session(ctx)
	if err != nil {
		if ctx.Err() != nil && !errors.As(err, new(*ConnectError)) {
			return timedOut(remote.Output{})
		}
		return remote.Output{Duration: time.Since(start)}, err
	}
	max := cmd.MaxOutput
	if max <= 0 {
		max = s.ssh.cfg.MaxOutput
	}
	if max <= 0 {
		max = remote.DefaultMaxOutput
	}
	job, err := ss.start(cmd.Line)
	if err != nil {
		return remote.Output{Duration: time.Since(start)}, err
	}
	select {
	case <-job.fin:
		out, err := ss.fetch(ctx, job, max)
		out.Duration = time.Since(start)
		if err != nil && ctx.Err() != nil {
			return timedOut(out)
		}
		return out, err
	case <-ss.dead:
		return remote.Output{Duration: time.Since(start)}, ss.lost()
	case <-ctx.Done():
	}
	out, stopErr := ss.stop(job, max)
	out, terr := timedOut(out)
	if stopErr != nil {
		return out, errors.Join(terr, stopErr)
	}
	return out, terr
}

// session returns the live session, opening one when there is none.
func (s *Shell) session(ctx context.Context) (*shellSession, error) {
	if ss := s.current(); ss != nil {
		return ss, nil
	}
	select {
	case s.opening <- struct{}{}:
		defer func() { <-s.opening }()
	case <-ctx.Done():
		return nil, fmt.Errorf("open shell on %s: %w", s.Host(), context.Cause(ctx))
	}
	// Another caller may have opened one while this one waited.
	if ss := s.current(); ss != nil {
		return ss, nil
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("open shell on %s: %w", s.Host(), ErrClosed)
	}
	ss, err := openShellSession(ctx, s.ssh)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		ss.close()
		return nil, fmt.Errorf("open shell on %s: %w", s.Host(), ErrClosed)
	}
	s.cur = ss
	return ss, nil
}

// current returns the session if it is still alive.
func (s *Shell) current() *shellSession {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur != nil && s.cur.isDead() {
		s.cur = nil
	}
	return s.cur
}
