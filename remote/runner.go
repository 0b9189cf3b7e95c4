// Package remote is how commands reach a host: the Runner interface, its local
// implementation (package sshrun has the SSH one), and the service managers
// that act through them.
package remote

import (
	"context"
	"fmt"
	"net"
	"time"
)

// DefaultMaxOutput caps each of stdout and stderr when a Command sets no cap.
const DefaultMaxOutput = 1 << 20

// Runner executes commands on one host and opens TCP connections from it.
// A Runner is safe for concurrent use: every Run is a separate session.
type Runner interface {
	// Run executes cmd.Line with the host's POSIX shell. A non-zero exit is
	// not an error: it is reported in Output.ExitCode. Errors mean the
	// command could not run or did not finish (see TimeoutError).
	Run(ctx context.Context, cmd Command) (Output, error)
	// DialContext opens a connection to addr as seen from the host, so that
	// services bound to the host's loopback are reachable (an SSH tunnel for
	// remote hosts).
	DialContext(ctx context.Context, network, addr string) (net.Conn, error)
	// Host names the host for errors and evidence.
	Host() string
}

// Command is one command line for the host's shell. Line must already be
// quoted: build it with shell.Join or a runbook template, never by
// concatenating untrusted text.
type Command struct {
	Line string
	// Stdin, when set, is fed to the command.
	Stdin []byte
	// MaxOutput caps stdout and stderr each; 0 means DefaultMaxOutput.
	MaxOutput int
}

// Output is what a finished command produced, with stdout and stderr apart.
type Output struct {
	ExitCode int
	Stdout   []byte
	Stderr   []byte
	// StdoutTruncated and StderrTruncated say the cap cut the stream.
	StdoutTruncated bool
	StderrTruncated bool
	Duration        time.Duration
}

// TimeoutError says a command outlived its deadline and was stopped.
type TimeoutError struct {
	Host    string
	Command string
	After   time.Duration
	// Cause is the context's cause, e.g. the step timeout that expired.
	Cause error
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("command on %s did not finish after %s and was stopped: %s", e.Host, e.After.Round(time.Millisecond), e.Command)
}

// Unwrap lets callers match the cause with errors.Is/As.
func (e *TimeoutError) Unwrap() error { return e.Cause }

// Dialer opens connections from a host; it is the part of a Runner that HTTP
// clients need.
type Dialer interface {
	DialContext(ctx context.Context, network, addr string) (net.Conn, error)
}
