package sshrun

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"golang.org/x/crypto/ssh"
)

// ConnectError says a host could not be reached or would not let runbot in;
// no command ran. A host key problem is a *HostKeyError inside it.
type ConnectError struct {
	Host    string
	Address string
	// Via names the jump host where the chain broke; empty when the failure
	// was at the target itself.
	Via string
	Err error
}

func (e *ConnectError) Error() string {
	if e.Via != "" {
		return fmt.Sprintf("connect to %s (%s) via jump host %s: %v", e.Host, e.Address, e.Via, e.Err)
	}
	return fmt.Sprintf("connect to %s (%s): %v", e.Host, e.Address, e.Err)
}

func (e *ConnectError) Unwrap() error { return e.Err }

// sshConn is one authenticated connection to a target, with the jump host
// connections it runs through.
type sshConn struct {
	client *ssh.Client
	hops   []*ssh.Client
}

// Close closes the target connection, then the hops from the last to the
// first.
func (c *sshConn) Close() error {
	err := c.client.Close()
	for i := len(c.hops) - 1; i >= 0; i-- {
		_ = c.hops[i].Close() // a hop's error adds nothing to the target's
	}
	return err
}

// dialSSH connects to c through its jump chain. c must have its defaults.
func dialSSH(ctx context.Context, c Config) (*sshConn, error) {
	conn := &sshConn{}
	var via *ssh.Client
	for _, hop := range c.Jump {
		cl, err := dialHop(ctx, via, hop)
		if err != nil {
			for i := len(conn.hops) - 1; i >= 0; i-- {
				_ = conn.hops[i].Close() // the dial error is the one to report
			}
			return nil, &ConnectError{Host: c.Name, Address: c.addr(), Via: hop.Name + " (" + hop.addr() + ")", Err: err}
		}
		conn.hops = append(conn.hops, cl)
		via = cl
	}
	cl, err := dialHop(ctx, via, c)
	if err != nil {
		for i := len(conn.hops) - 1; i >= 0; i-- {
			_ = conn.hops[i].Close() // the dial error is the one to report
		}
		return nil, &ConnectError{Host: c.Name, Address: c.addr(), Err: err}
	}
	conn.client = cl
	return conn, nil
}

// dialHop opens a TCP connection to c (directly, or through via) and runs
// the SSH handshake on it, all within c.ConnectTimeout and ctx.
func dialHop(ctx context.Context, via *ssh.Client, c Config) (*ssh.Client, error) {
	keys, err := newHostKeys(c)
	if err != nil {
		return nil, err
	}
	a, err := newAuth(ctx, c)
	if err != nil {
		return nil, err
	}
	defer a.Close()

	ctx, cancel := context.WithTimeoutCause(ctx, c.ConnectTimeout, fmt.Errorf("connect timeout %s expired", c.ConnectTimeout))
	defer cancel()
	addr := c.addr()
	var tcp net.Conn
	if via == nil {
		d := net.Dialer{KeepAlive: 30 * time.Second}
		tcp, err = d.DialContext(ctx, "tcp", addr)
	} else {
		tcp, err = via.DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return nil, dialFailure(ctx, err)
	}
	cfg := &ssh.ClientConfig{
		User:              c.User,
		Auth:              []ssh.AuthMethod{a.method},
		HostKeyCallback:   keys.check,
		HostKeyAlgorithms: keys.algorithms(addr),
	}
	// x/crypto's handshake takes no context, so closing the connection is
	// how the deadline interrupts it.
	stop := context.AfterFunc(ctx, func() { _ = tcp.Close() })
	sc, chans, reqs, err := ssh.NewClientConn(tcp, addr, cfg)
	if !stop() {
		if err == nil {
			_ = sc.Close() // the deadline is the error to report
		}
		return nil, dialFailure(ctx, ctx.Err())
	}
	if err != nil {
		_ = tcp.Close() // the handshake error is the one to report
		var hke *HostKeyError
		if errors.As(err, &hke) {
			return nil, hke
		}
		return nil, err
	}
	return ssh.NewClient(sc, chans, reqs), nil
}

// dialFailure prefers the context's cause, which says which deadline hit.
func dialFailure(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%w: %w", context.Cause(ctx), err)
	}
	return err
}
