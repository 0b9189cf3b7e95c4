package main

import (
	"fmt"

	"github.com/runbot/runbot/internal/redact"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/replay"
)

// saveRecording writes rec redacted by r (the CLI's redaction: serve's
// when given --config), because a recording is meant to be checked in and
// shared like a message.
func saveRecording(rec *replay.Recording, dir string, rep *runbooks.Report, r *redact.Redactor) error {
	if err := rec.Save(dir, rep, replay.SaveOptions{Redact: r.Redact}); err != nil {
		return fmt.Errorf("save recording: %w", err)
	}
	return nil
}
