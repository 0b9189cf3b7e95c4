package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/runbot/runbot/store"
)

// defaultStorePath follows the XDG base directory spec: runs are state.
func defaultStorePath() string {
	if p := os.Getenv("RUNBOT_STORE"); p != "" {
		return p
	}
	dir := os.Getenv("XDG_STATE_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "runbot.db"
		}
		dir = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(dir, "runbot", "runbot.db")
}

// openStore opens the store at location (a SQLite path or sqlite:///path,
// or a postgres:// URL) and recovers what a dead process left. Everything
// after it needs only the store.Store interface.
func openStore(ctx context.Context, location string, opts ...store.Option) (store.Store, error) {
	st, _, err := openRecovered(ctx, location, opts...)
	return st, err
}

// openRecovered opens the store and returns what its recovery changed, for
// serve to bring the Slack messages of those runs and plans up to date. A
// SQLite file's directory is created first. Errors never hold a DSN's
// password.
func openRecovered(ctx context.Context, location string, opts ...store.Option) (store.Store, store.Recovery, error) {
	loc, err := store.ParseLocation(location)
	if err != nil {
		return nil, store.Recovery{}, err
	}
	if loc.Backend == store.BackendSQLite {
		if err := os.MkdirAll(filepath.Dir(loc.Path), 0o700); err != nil {
			return nil, store.Recovery{}, fmt.Errorf("create store directory: %w", err)
		}
	}
	st, err := store.OpenURL(ctx, location, opts...)
	if err != nil {
		return nil, store.Recovery{}, err
	}
	// Any runbot process that opens the store first marks what a dead
	// process left half-done: runs without a stored report as interrupted,
	// runs with one as finished (never run again), remediations as
	// interrupted (never to be resumed without a new approval). Rows of
	// processes still alive are left alone.
	rec, err := st.MarkInterrupted(ctx)
	if err != nil {
		_ = st.Close() // the recovery error is the one to report
		return nil, store.Recovery{}, fmt.Errorf("recover the store %s: %w", loc, err)
	}
	for _, id := range rec.Runs {
		slog.Warn("run was interrupted: the process running it died before its report was stored", "run", id)
	}
	for _, id := range rec.Finished {
		slog.Info("run had ended before the process died: its result stands and it is not run again", "run", id)
	}
	for _, id := range rec.Plans {
		slog.Warn("remediation was interrupted: the process applying it died; it will not be resumed without a new approval", "plan", id)
	}
	for _, id := range rec.Requeued {
		slog.Warn("queued work runs again: its run was cut short", "work", id, "max_attempts", store.MaxWorkAttempts)
	}
	for _, id := range rec.Abandoned {
		slog.Error("queued work is not run again: it was cut short on every attempt", "work", id, "attempts", store.MaxWorkAttempts)
	}
	return st, rec, nil
}

// openLeased opens the store for a command that runs runbooks (run, fleet)
// and holds this process's replica lease while it is open, so that a
// `runbot serve` replica on another host sweeping the same PostgreSQL
// database leaves this process's runs alone while it runs. Closing the
// store resigns the lease.
func openLeased(ctx context.Context, location string, opts ...store.Option) (store.Store, error) {
	st, err := openStore(ctx, location, opts...)
	if err != nil {
		return nil, err
	}
	stop, err := holdLease(ctx, st, slog.Default())
	if err != nil {
		_ = st.Close() // the lease error is the one to report
		return nil, err
	}
	return &leasedStore{Store: st, stop: stop}, nil
}

// leasedStore is a store whose process holds a replica lease until Close.
type leasedStore struct {
	store.Store
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

// holdLease registers this process's replica lease and renews it in the
// background (store.KeepAlive at the default heartbeat and TTL) until stop
// is called, which resigns it and waits for the loop to end. The first
// heartbeat is synchronous: until it is stored, a sweep in another process
// would judge this process's rows by a PID check, which fails for a
// process on another host, so nothing may be claimed before it.
func holdLease(ctx context.Context, st store.Store, log *slog.Logger) (stop func(), err error) {
	hctx, cancel := context.WithTimeoutCause(ctx, leaseRegisterTimeout, errors.New("registering the replica lease took too long"))
	_, err = st.Heartbeat(hctx, store.DefaultLeaseTTL)
	cancel()
	var lapsed *store.LeaseLapsedError
	if err != nil && !errors.As(err, &lapsed) {
		return nil, fmt.Errorf("register replica lease: %w", err)
	}
	lctx, stopLoop := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		store.KeepAlive(lctx, st, store.DefaultHeartbeat, store.DefaultLeaseTTL, log, nil)
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			stopLoop()
			<-done
		})
	}, nil
}
