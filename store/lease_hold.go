package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// OpenLeased opens the store for a command that runs runbooks (run, fleet)
// and holds this process's replica lease while it is open, so that a
// `runbot serve` replica on another host sweeping the same PostgreSQL
// database leaves this process's runs alone while it runs. Closing the
// store resigns the lease.
func OpenLeased(ctx context.Context, location string, opts ...Option) (Store, error) {
	st, err := OpenForUse(ctx, location, opts...)
	if err != nil {
		return nil, err
	}
	stop, err := HoldLease(ctx, st, slog.Default(), nil)
	if err != nil {
		_ = st.Close() // the lease error is the one to report
		return nil, err
	}
	return &leasedStore{Store: st, stop: stop}, nil
}

// leasedStore is a store whose process holds a replica lease until Close.
type leasedStore struct {
	Store
	stop func()
}

// Close resigns the lease, then closes the store.
func (l *leasedStore) Close() error {
	l.stop()
	return l.Store.Close()
}

// leaseRegisterTimeout bounds the first heartbeat, which a process waits
// for before it owns anything.
const leaseRegisterTimeout = 30 * time.Second

// HoldLease registers this process's replica lease and renews it in the
// background (KeepAlive at the default heartbeat and TTL) until stop
// is called, which resigns it and waits for the loop to end. The first
// heartbeat is synchronous: until it is stored, a sweep in another process
// would judge this process's rows by a PID check, which fails for a
// process on another host, so nothing may be claimed before it. renewed,
// when set, is told after each renewal until when the lease surely holds
// (KeepAlive), for a process that must stop acting before it lapses.
func HoldLease(ctx context.Context, st Store, log *slog.Logger, renewed func(until time.Time)) (stop func(), err error) {
	hctx, cancel := context.WithTimeoutCause(ctx, leaseRegisterTimeout, errors.New("registering the replica lease took too long"))
	started := time.Now()
	_, err = st.Heartbeat(hctx, DefaultLeaseTTL)
	cancel()
	var lapsed *LeaseLapsedError
	if err != nil && !errors.As(err, &lapsed) {
		return nil, fmt.Errorf("register replica lease: %w", err)
	}
	if renewed != nil {
		renewed(started.Add(DefaultLeaseTTL))
	}
	lctx, stopLoop := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		KeepAlive(lctx, st, DefaultHeartbeat, DefaultLeaseTTL, log, renewed)
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			stopLoop()
			<-done
		})
	}, nil
}
