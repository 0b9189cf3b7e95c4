package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/runbot/runbot/internal/redact"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/replay"
)

// emptyDir checks, before a run starts, that a recording can be written
// to dir: it must not exist or be empty, so that a recording is never
// mixed into another and a typo is found before a 40 s run, not after.
func emptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("check %s: %w", dir, err)
	case len(entries) > 0:
		return fmt.Errorf("%s is not empty", dir)
	}
	return nil
}

// saveRecording writes rec redacted by r (the CLI's redaction: serve's
// when given --config), because a recording is meant to be checked in and
// shared like a message.
func saveRecording(rec *replay.Recording, dir string, rep *runbooks.Report, r *redact.Redactor) error {
	if err := rec.Save(dir, rep, replay.SaveOptions{Redact: r.Redact}); err != nil {
		return fmt.Errorf("save recording: %w", err)
	}
	return nil
}
