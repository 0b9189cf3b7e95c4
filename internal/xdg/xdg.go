// Package xdg finds where runbot keeps a user's files, as the XDG base
// directory spec says.
package xdg

import (
	"os"
	"path/filepath"
)

// State is the path of name in runbot's directory of the user's state
// ($XDG_STATE_HOME/runbot, else ~/.local/state/runbot). It is fallback,
// in the working directory, when neither can be known.
func State(name, fallback string) string {
	dir := os.Getenv("XDG_STATE_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return fallback
		}
		dir = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(dir, "runbot", name)
}
