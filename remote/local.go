package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"syscall"
	"time"
)

// Local runs commands on the machine runbot runs on, through /bin/sh, with
// the same semantics as a remote SSH session.
type Local struct {
	// Name is how evidence names this host; "localhost" when empty.
	Name string
}

// Host implements Runner.
func (l *Local) Host() string {
	if l.Name == "" {
		return "localhost"
	}
	return l.Name
}

// Run implements Runner. The command runs in its own process group so that a
// deadline stops the whole tree it started, not just the shell.
func (l *Local) Run(ctx context.Context, cmd Command) (Output, error) {
	start := time.Now()
	timedOut := func() error {
		return &TimeoutError{Host: l.Host(), Command: cmd.Line, After: time.Since(start), Cause: context.Cause(ctx)}
	}
	c := exec.CommandContext(ctx, "/bin/sh", "-c", cmd.Line)
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// At the deadline the whole process group goes, not just the shell.
	c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
	if cmd.Stdin != nil {
		c.Stdin = bytes.NewReader(cmd.Stdin)
	}
	stdout, stderr := NewCapWriter(cmd.MaxOutput), NewCapWriter(cmd.MaxOutput)
	c.Stdout, c.Stderr = stdout, stderr
	if err := c.Start(); err != nil {
		if ctx.Err() != nil {
			return Output{}, timedOut()
		}
		return Output{}, fmt.Errorf("start command on %s: %w", l.Host(), err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		// Cancel above stops the group only while the shell lives; a child
		// that outlived it may still hold the output pipes, which Wait
		// waits for. Kill the group, then wait so no zombie is left behind.
		_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		err = <-done
	}
	// The deadline ended the command, whichever of the two saw it first.
	if ctx.Err() != nil {
		return Output{}, timedOut()
	}
	out := Output{
		Stdout: stdout.Bytes(), Stderr: stderr.Bytes(),
		StdoutTruncated: stdout.truncated, StderrTruncated: stderr.truncated,
		Duration: time.Since(start),
	}
	if err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			return out, fmt.Errorf("run command on %s: %w", l.Host(), err)
		}
		out.ExitCode = exit.ExitCode()
		if out.ExitCode < 0 {
			// Killed by a signal: report it like a shell would (128+n).
			if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				out.ExitCode = 128 + int(ws.Signal())
			}
		}
	}
	return out, nil
}

// DialContext implements Runner with a plain local dial.
func (l *Local) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}
