// Package sshrun runs commands on hosts over SSH: a Runner on one kept
// connection per host, the Pool that shares them, host-key checking against
// known_hosts or pinned keys, jump hosts, SFTP reads, a shared shell session,
// and systemd's D-Bus reached through the connection. It implements the
// interfaces of package remote.
package sshrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/runbot/runbot/remote"
	"golang.org/x/crypto/ssh"
)

// ErrConnectionLost says the connection broke while a command ran, so its
// outcome is unknown. The next command reconnects. It says so to those
// that cannot import this package through its OutcomeUnknown method
// (actions.OutcomeUnknown).
var ErrConnectionLost error = connectionLost{}

type connectionLost struct{}

func (connectionLost) Error() string { return "connection lost before the command finished" }

// OutcomeUnknown says the command may or may not have taken effect.
func (connectionLost) OutcomeUnknown() bool { return true }

// stopTimeout bounds the work of stopping a timed-out command: learning its
// process group, killing it from a second session and collecting its output.
const stopTimeout = 5 * time.Second

// Runner is a remote.Runner for one host over a single SSH connection: every command
// is a new session on it and every DialContext a tunnel through it. The
// connection is dialed on first use (or by Connect), watched with
// keepalives, and redialed when it breaks. Runner is safe for concurrent use.
type Runner struct {
	cfg Config
	// sessions bounds concurrent commands; kills is a slot kept apart so a
	// timed-out command can always be stopped, even when every other slot
	// is taken.
	sessions chan struct{}
	kills    chan struct{}
	closing  chan struct{}

	mu      sync.Mutex
	conn    *liveConn
	dialing *dialCall
	closed  bool
	dials   int
	// onDial is told about each connection attempt; set before first use.
	onDial func(DialEvent)
	// idleTimeout, when positive, closes the connection once nothing has
	// used it for that long (set before first use); retired counts those
	// closes.
	idleTimeout time.Duration
	retired     int
	// bus remembers that the host's systemd bus cannot be reached
	// (Systemd then reads with systemctl).
	bus busRefusal
	// files remembers that the host's sshd offers no SFTP (file reads then
	// run cat).
	files sftpRefusal
}

// New returns a runner for the host cfg describes. It does not dial.
func New(cfg Config) (*Runner, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	slots := c.MaxSessions - 1
	if slots < 1 {
		slots = 1
	}
	return &Runner{
		cfg:      c,
		sessions: make(chan struct{}, slots),
		kills:    make(chan struct{}, 1),
		closing:  make(chan struct{}),
	}, nil
}

// Host implements Runner.
func (s *Runner) Host() string { return s.cfg.Name }

// Config returns the configuration in use, defaults filled in.
func (s *Runner) Config() Config { return s.cfg }

// Dials says how many connections have been established so far; more than
// one means the runner reconnected.
func (s *Runner) Dials() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dials
}

// Run implements Runner. The command runs under ctx's deadline; when it
// expires the command's remote process group is killed and the error is a
// *TimeoutError. Output produced so far is returned with any error.
func (s *Runner) Run(ctx context.Context, cmd remote.Command) (remote.Output, error) {
	start := time.Now()
	timedOut := func(out remote.Output) (remote.Output, error) {
		out.Duration = time.Since(start)
		return out, &remote.TimeoutError{Host: s.cfg.Name, Command: cmd.Line, After: out.Duration, Cause: context.Cause(ctx)}
	}
	if ctx.Err() != nil {
		return timedOut(remote.Output{})
	}
	select {
	case s.sessions <- struct{}{}:
		defer func() { <-s.sessions }()
	case <-ctx.Done():
		return timedOut(remote.Output{})
	}
	sess, conn, err := s.openSession(ctx)
	if err != nil {
		if ctx.Err() != nil && !errors.As(err, new(*ConnectError)) {
			return timedOut(remote.Output{})
		}
		return remote.Output{Duration: time.Since(start)}, err
	}
	defer s.done(conn)
	// Wait closes the session, so a later close only reports that (io.EOF).
	defer func() { _ = sess.Close() }()

	max := cmd.MaxOutput
	if max <= 0 {
		max = s.cfg.MaxOutput
	}
	stdout := newHeaderWriter(remote.NewCapWriter(max))
	stderr := &lockedWriter{w: remote.NewCapWriter(max)}
	sess.Stdout, sess.Stderr = stdout, stderr
	// Stdin is fed by hand rather than through sess.Stdin, whose copy error
	// Wait would report: a command that exits without reading its input has
	// not failed (os/exec, and so Local, see it the same way).
	var stdin io.WriteCloser
	if cmd.Stdin != nil {
		if stdin, err = sess.StdinPipe(); err != nil {
			return remote.Output{Duration: time.Since(start)}, fmt.Errorf("start command on %s: %w", s.cfg.Name, err)
		}
	}
	// Start waits for the server's reply without a context; closing the
	// session is what interrupts it on a connection that went silent.
	closeOnExpiry := context.AfterFunc(ctx, func() { _ = sess.Close() })
	err = sess.Start(wrapLine(cmd.Line))
	if !closeOnExpiry() {
		return timedOut(remote.Output{})
	}
	if err != nil {
		return remote.Output{Duration: time.Since(start)}, fmt.Errorf("start command on %s: %w", s.cfg.Name, err)
	}
	if stdin != nil {
		go func() {
			// Errors ignored on purpose, see above: the command may exit
			// without reading its input.
			_, _ = stdin.Write(cmd.Stdin)
			_ = stdin.Close()
		}()
	}
	waited := make(chan error, 1)
	go func() { waited <- sess.Wait() }()
	collect := func() remote.Output {
		var out remote.Output
		out.Stdout, out.StdoutTruncated = stdout.output()
		out.Stderr, out.StderrTruncated = stderr.output()
		out.Duration = time.Since(start)
		return out
	}

	select {
	case err := <-waited:
		return s.finish(collect(), err)
	case <-ctx.Done():
	}
	stopErr := s.stop(conn, stdout.found, waited, sess)
	out, terr := timedOut(collect())
	if stopErr != nil {
		return out, errors.Join(terr, stopErr)
	}
	return out, terr
}

// openSession opens a session, redialing once when the connection turns out
// to be broken before the command started (so nothing ran twice). The
// session's connection is in use until the caller calls s.done on it.
func (s *Runner) openSession(ctx context.Context) (*ssh.Session, *liveConn, error) {
	for attempt := 0; ; attempt++ {
		conn, err := s.use(ctx)
		if err != nil {
			return nil, nil, err
		}
		sess, err := newSession(ctx, conn.client)
		if err == nil {
			return sess, conn, nil
		}
		s.done(conn)
		if ctx.Err() != nil {
			return nil, nil, fmt.Errorf("open session on %s: %w", s.cfg.Name, context.Cause(ctx))
		}
		var refused *ssh.OpenChannelError
		if errors.As(err, &refused) || attempt > 0 {
			// The server said no, or a fresh connection failed too: a
			// retry would not help.
			return nil, nil, fmt.Errorf("open session on %s: %w", s.cfg.Name, err)
		}
		s.forget(conn)
	}
}

// newSession opens a session under ctx. A refusal is retried a few times
// with a short backoff: OpenSSH counts a finished session against
// MaxSessions until it has cleaned up after it, so a new session opened
// right after one ends can be refused although the runner keeps within the
// limit.
func newSession(ctx context.Context, c *ssh.Client) (*ssh.Session, error) {
	backoff := 5 * time.Millisecond
	for attempt := 1; ; attempt++ {
		s, err := openSession(ctx, c)
		var refused *ssh.OpenChannelError
		if err == nil || !errors.As(err, &refused) || attempt == 6 {
			return s, err
		}
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
		backoff *= 2
	}
}

// openSession opens a session under ctx. x/crypto's NewSession takes no
// context, so a late session is closed by a goroutine left behind.
func openSession(ctx context.Context, c *ssh.Client) (*ssh.Session, error) {
	type result struct {
		s   *ssh.Session
		err error
	}
	ch := make(chan result, 1)
	go func() {
		s, err := c.NewSession()
		ch <- result{s, err}
	}()
	select {
	case r := <-ch:
		return r.s, r.err
	case <-ctx.Done():
		go func() {
			if r := <-ch; r.s != nil {
				_ = r.s.Close() // opened too late; nobody wants it
			}
		}()
		return nil, ctx.Err()
	}
}

// finish turns the session's end into Output: exit status, or 128+n for a
// command killed by signal n, as a shell reports it.
func (s *Runner) finish(out remote.Output, err error) (remote.Output, error) {
	var exit *ssh.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		out.ExitCode = exit.ExitStatus()
		if sig := exit.Signal(); sig != "" {
			out.ExitCode = 128 + signalNumber(sig)
		}
	case errors.As(err, new(*ssh.ExitMissingError)):
		return out, fmt.Errorf("run command on %s: %w", s.cfg.Name, ErrConnectionLost)
	default:
		return out, fmt.Errorf("run command on %s: %w: %w", s.cfg.Name, ErrConnectionLost, err)
	}
	return out, nil
}

// stop kills a timed-out command's process group through a second session,
// then waits for the first session to end so its output is complete. It is
// bounded by stopTimeout, independent of the caller's expired ctx.
func (s *Runner) stop(conn *liveConn, found <-chan procGroup, waited <-chan error, sess *ssh.Session) error {
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	defer func() { _ = sess.Close() }() // the command timed out; the close adds nothing
	var g procGroup
	select {
	case g = <-found:
	case err := <-waited:
		// It finished just as the deadline hit: nothing is left to kill,
		// and how it ended no longer matters, as it timed out.
		_ = err
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stop command on %s: the remote process id never arrived, so it may still be running", s.cfg.Name)
	}
	if err := s.kill(ctx, conn, g); err != nil {
		return fmt.Errorf("stop command on %s (process group %d): %w; it may still be running", s.cfg.Name, g.pid, err)
	}
	select {
	case err := <-waited:
		_ = err // it was killed: its end is expected, not news
	case <-ctx.Done():
	}
	return nil
}

func (s *Runner) kill(ctx context.Context, conn *liveConn, g procGroup) error {
	select {
	case s.kills <- struct{}{}:
		defer func() { <-s.kills }()
	case <-ctx.Done():
		return ctx.Err()
	}
	ks, err := newSession(ctx, conn.client)
	if err != nil {
		return err
	}
	defer func() { _ = ks.Close() }() // Run's result is what counts
	done := make(chan error, 1)
	go func() { done <- ks.Run(g.killLine()) }()
	select {
	case err := <-done:
		// A non-zero exit means the processes were already gone.
		if err != nil && !errors.As(err, new(*ssh.ExitError)) {
			return err
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// signalNumber maps an SSH signal name to its Linux number.
func signalNumber(name string) int {
	switch name {
	case "HUP":
		return 1
	case "INT":
		return 2
	case "QUIT":
		return 3
	case "ILL":
		return 4
	case "ABRT":
		return 6
	case "FPE":
		return 8
	case "KILL":
		return 9
	case "USR1":
		return 10
	case "SEGV":
		return 11
	case "USR2":
		return 12
	case "PIPE":
		return 13
	case "ALRM":
		return 14
	case "TERM":
		return 15
	default:
		return 0
	}
}
