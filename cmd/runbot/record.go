package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/slackchat"
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

// saveRecording writes rec with the redaction that every Slack message
// gets (slackchat's default patterns: tokens, keys, password=…, plus the
// extra patterns given, as slack.redact adds them in serve), because a
// recording is meant to be checked in and shared like a message.
func saveRecording(rec *runbooks.Recording, dir string, rep *runbooks.Report, patterns []string) error {
	r, err := slackchat.NewRedactor(patterns)
	if err != nil {
		return fmt.Errorf("save recording: %w", err)
	}
	if err := rec.Save(dir, rep, runbooks.SaveOptions{Redact: r.Redact}); err != nil {
		return fmt.Errorf("save recording: %w", err)
	}
	return nil
}
