package sshrun

import (
	"context"
	"errors"
	"net"
	"strings"
	"time"
)

// DialEvent is one SSH connection attempt, reported through Pool.OnDial.
type DialEvent struct {
	// Host is the inventory name of the target.
	Host string
	Took time.Duration
	// Err is nil when the connection was made and authenticated.
	Err error
}

// Outcome sorts the attempt into what an operator acts on differently:
// ok, host_key (the key changed or is unknown: a security question),
// auth (the server refused runbot's key), timeout, unreachable (refused,
// no route, no such name) or error.
func (e DialEvent) Outcome() string {
	var hk *HostKeyError
	var ne net.Error
	var oe *net.OpError
	switch {
	case e.Err == nil:
		return "ok"
	case errors.As(e.Err, &hk):
		return "host_key"
	// x/crypto/ssh has no typed error for a refused login, only this text.
	case strings.Contains(e.Err.Error(), "unable to authenticate"):
		return "auth"
	case errors.Is(e.Err, context.DeadlineExceeded), errors.As(e.Err, &ne) && ne.Timeout():
		return "timeout"
	case errors.As(e.Err, &oe):
		return "unreachable"
	}
	return "error"
}
