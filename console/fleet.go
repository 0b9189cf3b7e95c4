package console

import (
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/runbot/runbot/runbooks/fleet"
)

// Fleet shows a fleet run as one table, a deployment a line.
func Fleet(w io.Writer, doc fleet.Doc) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	o := NewOutput(tw)
	notRun := 0
	for _, r := range doc.Runs {
		if r.Error != "" {
			notRun++
		}
	}
	// The count is of the deployments that ran: one that lacks a role the
	// runbook needs is selected but not run, and says so in its row.
	o.Printf("%s on %d deployments, %d at a time, in %s", doc.Runbook, len(doc.Runs)-notRun, doc.Parallel, ms(doc.DurationMS))
	if notRun > 0 {
		o.Printf("; %d more selected could not be run", notRun)
	}
	o.Printf("\n\n")
	o.Printf("DEPLOYMENT\tOUTCOME\tDIAGNOSES\tVERDICT\tTOOK\tRUN\n")
	for _, r := range doc.Runs {
		if r.Error != "" {
			o.Printf("%s\tnot run\t%s\t\t\t\n", r.Deployment, r.Error)
			continue
		}
		o.Printf("%s\t%s\t%s\t%s\t%s\t%s\n", r.Deployment, r.Outcome, Dash(strings.Join(r.Diagnoses, ", ")), ms(r.VerdictMS), ms(r.DurationMS), r.RunID)
	}
	if o.err != nil {
		return o.err
	}
	return tw.Flush()
}

func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }
