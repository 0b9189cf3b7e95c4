package main

import (
	"context"
	"fmt"
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
	return store.Open(ctx, path, opts...)
}
