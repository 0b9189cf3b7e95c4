package incident

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/runbot/runbot/internal/redact"
)

// postmortemTimeout bounds reading a run and everything recorded about it.
const postmortemTimeout = 30 * time.Second

// WritePostmortem writes the postmortem draft of run id (Markdown), the
// same the report page offers, as `runbot show RUN --format markdown`
// prints it. A draft is made to be pasted into documents, so it is
// redacted by r (the CLI's redaction: serve's when given its config).
func WritePostmortem(ctx context.Context, w io.Writer, st Store, id string, r *redact.Redactor) error {
	ctx, cancel := context.WithTimeoutCause(ctx, postmortemTimeout, errors.New("reading the run for its postmortem took too long"))
	defer cancel()
	inc, err := LoadRedacted(ctx, st, id, r)
	if err != nil {
		return err
	}
	if err := inc.Markdown(w, ""); err != nil {
		return fmt.Errorf("write the postmortem of %s: %w", id, err)
	}
	return nil
}
