package console

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/runbot/runbot/store"
)

// PlanLine is one plan as runbot plans lists it: the plan, the runbook
// that proposed it (kept in the plan's body, which the store does not
// read) and how many approvals of its current hash it has so far.
type PlanLine struct {
	Plan      store.Plan
	Runbook   string
	Approvals int
}

// Plans shows plans as a table, a plan a line: what it fixes where, where
// it stands, who may approve it and until when. now tells an approval
// window that has closed from one that is open.
func Plans(w io.Writer, plans []PlanLine, now time.Time) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	o := NewOutput(tw)
	o.Println("PLAN\tRUN\tRUNBOOK/REMEDIATION\tDEPLOYMENT\tDIAGNOSIS\tSTATE\tAPPROVALS\tAPPROVERS\tEXPIRES")
	for _, l := range plans {
		p := l.Plan
		o.Printf("%s\t%s\t%s/%s\t%s\t%s\t%s\t%d of %d\t%s\t%s\n", p.ID, p.RunID, Dash(l.Runbook), p.Remediation, p.Deployment,
			Dash(p.Diagnosis), p.State, l.Approvals, p.Policy.Needed(), approvers(p), expiry(p, now))
	}
	if o.err != nil {
		return o.err
	}
	return tw.Flush()
}

// approvers names who may approve a plan, and who may not under the
// two-person rule.
func approvers(p store.Plan) string {
	s := Dash(strings.Join(p.Policy.Approvers, ","))
	if p.Policy.TwoPerson {
		s += fmt.Sprintf(" (two-person: not %s)", Dash(p.RequestedBy))
	}
	return s
}

// expiry says until when a plan waiting for approval, or to be applied,
// may be: its window's end, "expired" once that passed, "never" without
// one, and "-" for a plan past both.
func expiry(p store.Plan, now time.Time) string {
	switch {
	case p.State != store.PlanProposed && p.State != store.PlanApproved:
		return "-"
	case p.Policy.ExpiresAt.IsZero():
		return "never"
	case !now.Before(p.Policy.ExpiresAt):
		return "expired " + p.Policy.ExpiresAt.UTC().Format("2006-01-02 15:04:05Z")
	}
	return p.Policy.ExpiresAt.UTC().Format("2006-01-02 15:04:05Z")
}
