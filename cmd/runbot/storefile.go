package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

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

func openStore(ctx context.Context, path string, opts ...store.Option) (*store.SQLite, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create store directory: %w", err)
	}
	st, err := store.Open(ctx, path, opts...)
	if err != nil {
		return nil, err
	}
	// Any runbot process that opens the store first marks what a dead
	// process left half-done: runs as interrupted, remediations as
	// interrupted (never to be resumed without a new approval). Rows of
	// processes still alive are left alone.
	rec, err := st.MarkInterrupted(ctx)
	if err != nil {
		_ = st.Close() // the recovery error is the one to report
		return nil, fmt.Errorf("recover the store: %w", err)
	}
	for _, id := range rec.Runs {
		slog.Warn("run was interrupted: the process running it died", "run", id)
	}
	for _, id := range rec.Plans {
		slog.Warn("remediation was interrupted: the process applying it died; it will not be resumed without a new approval", "plan", id)
	}
	return st, nil
}
