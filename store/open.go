package store

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
)

// OpenForUse opens the store at location (a SQLite path or sqlite:///path,
// or a postgres:// URL) and recovers what a dead process left, as every
// runbot process does before it uses a store. Everything after it needs
// only the Store interface.
func OpenForUse(ctx context.Context, location string, opts ...Option) (Store, error) {
	st, _, err := OpenRecovering(ctx, location, opts...)
	return st, err
}

// OpenRecovering opens the store and returns what its recovery changed,
// for serve to bring the chat messages of those runs and plans up to date.
// A SQLite file's directory is created first. Errors never hold a DSN's
// password.
func OpenRecovering(ctx context.Context, location string, opts ...Option) (Store, Recovery, error) {
	loc, err := ParseLocation(location)
	if err != nil {
		return nil, Recovery{}, err
	}
	if loc.Backend == BackendSQLite {
		if err := os.MkdirAll(filepath.Dir(loc.Path), 0o700); err != nil {
			return nil, Recovery{}, fmt.Errorf("create store directory: %w", err)
		}
	}
	st, err := OpenURL(ctx, location, opts...)
	if err != nil {
		return nil, Recovery{}, err
	}
	// Any runbot process that opens the store first marks what a dead
	// process left half-done: runs without a stored report as interrupted,
	// runs with one as finished (never run again), remediations as
	// interrupted (never to be resumed without a new approval). Rows of
	// processes still alive are left alone.
	rec, err := st.MarkInterrupted(ctx)
	if err != nil {
		_ = st.Close() // the recovery error is the one to report
		return nil, Recovery{}, fmt.Errorf("recover the store %s: %w", loc, err)
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
		slog.Warn("queued work runs again: its run was cut short", "work", id, "max_attempts", MaxWorkAttempts)
	}
	for _, id := range rec.Abandoned {
		slog.Error("queued work is not run again: it was cut short on every attempt", "work", id, "attempts", MaxWorkAttempts)
	}
	return st, rec, nil
}
