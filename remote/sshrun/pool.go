package sshrun

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"time"

	"github.com/runbot/runbot/remote"
)

// Pool hands out one SSH runner, and so one connection, per host name, for
// the life of a run (close it at the end) or of the serve process. Each
// runner keeps its connection alive and redials it when it breaks; callers
// that arrive while a host is being dialed share that dial.
type Pool struct {
	// OnDial, when set before the pool is used, is told about every
	// connection attempt of the pool's runners (for metrics).
	OnDial func(DialEvent)
	// IdleTimeout, when set before the pool is used, closes a host's
	// connection (and with it the host's sshd, sftp-server and bus
	// forwarding) once nothing has used it for that long; the next use
	// dials again. Zero keeps connections until Close, as a run does.
	IdleTimeout time.Duration

	mu     sync.Mutex
	hosts  map[string]*pooled
	closed bool
}

type pooled struct {
	// asked is the configuration as given, to notice a changed inventory.
	asked Config
	ssh   *Runner
}

// NewPool returns an empty pool.
func NewPool() *Pool {
	return &Pool{hosts: map[string]*pooled{}}
}

// Runner returns the pool's runner for cfg's host without dialing. When the
// host's configuration changed since the runner was made (an inventory
// reload), the old runner is closed, failing its commands in flight, and a
// new one takes its place.
func (p *Pool) Runner(cfg Config) (*Runner, error) {
	key := cfg.host()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, ErrClosed
	}
	if e, ok := p.hosts[key]; ok {
		if reflect.DeepEqual(e.asked, cfg) {
			return e.ssh, nil
		}
		// Replaced by a runner for the new config; Runner.Close reports nothing.
		_ = e.ssh.Close()
		delete(p.hosts, key)
	}
	s, err := New(cfg)
	if err != nil {
		return nil, err
	}
	s.onDial = p.OnDial
	s.idleTimeout = p.IdleTimeout
	p.hosts[key] = &pooled{asked: cfg, ssh: s}
	return s, nil
}

// Get returns the pool's runner for cfg's host, connected.
func (p *Pool) Get(ctx context.Context, cfg Config) (*Runner, error) {
	s, err := p.Runner(cfg)
	if err != nil {
		return nil, err
	}
	if err := s.Connect(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// FanOut connects to every host and calls fn with its runner, at most
// parallelism hosts at a time; see the package-level FanOut. A host that
// cannot be reached gets its *ConnectError as its result.
func (p *Pool) FanOut(ctx context.Context, hosts []Config, parallelism int, fn func(ctx context.Context, r remote.Runner) error) []remote.HostResult {
	names := make([]string, len(hosts))
	for i, h := range hosts {
		names[i] = h.host()
	}
	return remote.FanOutNamed(ctx, names, parallelism, func(ctx context.Context, i int) error {
		r, err := p.Get(ctx, hosts[i])
		if err != nil {
			return err
		}
		return fn(ctx, r)
	})
}

// Close closes every connection. The pool cannot be used afterwards.
func (p *Pool) Close() error {
	p.mu.Lock()
	hosts := p.hosts
	p.hosts = nil
	p.closed = true
	p.mu.Unlock()
	var errs []error
	for _, e := range hosts {
		errs = append(errs, e.ssh.Close())
	}
	return errors.Join(errs...)
}
