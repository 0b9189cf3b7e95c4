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
	o.Printf("%s on %d deployments, %d at a time, in %s\n\n", doc.Runbook, len(doc.Runs), doc.Parallel, ms(doc.DurationMS))
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
