package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/runbot/runbot/incident"
	"github.com/runbot/runbot/internal/redact"
	"github.com/runbot/runbot/store"
)

// postmortemTimeout bounds reading a run and everything recorded about it.
const postmortemTimeout = 30 * time.Second

// writePostmortem prints `runbot show RUN --format markdown`: the run's
// postmortem draft, the same the report page offers. A draft is made to be
// pasted into documents, so it is redacted by red (the CLI's redaction:
// serve's when given --config).
func writePostmortem(cmd *cobra.Command, st store.Store, runID string, red *redact.Redactor) error {
	ctx, cancel := context.WithTimeoutCause(cmd.Context(), postmortemTimeout, errors.New("reading the run for its postmortem took too long"))
	defer cancel()
	inc, err := incident.LoadRedacted(ctx, st, runID, red)
	if err != nil {
		return err
	}
	if err := inc.Markdown(cmd.OutOrStdout(), ""); err != nil {
		return fmt.Errorf("write the postmortem of %s: %w", runID, err)
	}
	return nil
}
