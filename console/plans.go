package console

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/store"
)

// Plans shows plans as a table, a plan a line: what it fixes where, where
// it stands, who may approve it and until when. now tells an approval
// window that has closed from one that is open.
func Plans(w io.Writer, plans []remediation.Standing, now time.Time) error {
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

// NoPlans says that runbot plans found no plan to list; all is whether it
// looked at every plan or only at those awaiting approval.
func NoPlans(w io.Writer, all bool) error {
	what := "No plans are awaiting approval (runbot plans --all lists every plan)."
	if all {
		what = "No plans."
	}
	_, err := fmt.Fprintln(w, what)
	return err
}

// PlanStanding shows a plan as it is voted on: Plan (with the hash a vote
// is bound to), then where it stands and who may approve it.
func PlanStanding(w io.Writer, b *remediation.PlanBody, s remediation.Standing) {
	out := NewOutput(w)
	plan := s.Plan
	Plan(out, b, plan.ID)
	out.Printf("Run %s, plan %s: %s; %d of %d approvals; approvers: %s", plan.RunID, plan.ID, plan.State, s.Approvals, plan.Policy.Needed(), strings.Join(plan.Policy.Approvers, ", "))
	if plan.Policy.TwoPerson {
		out.Printf(" (two-person rule: %s, who asked, cannot approve)", Dash(plan.RequestedBy))
	}
	if !plan.Policy.ExpiresAt.IsZero() {
		out.Printf("; expires %s", plan.Policy.ExpiresAt.UTC().Format("2006-01-02 15:04:05Z"))
	}
	out.Println()
}

// PlanDoc is a plan in runbot plans' JSON: what the table shows, by name.
type PlanDoc struct {
	PlanID      string          `json:"plan_id"`
	RunID       string          `json:"run_id"`
	Runbook     string          `json:"runbook"`
	Remediation string          `json:"remediation"`
	Deployment  string          `json:"deployment"`
	Diagnosis   string          `json:"diagnosis,omitempty"`
	State       store.PlanState `json:"state"`
	Hash        string          `json:"hash"`
	Approvals   int             `json:"approvals"`
	Needed      int             `json:"needed"`
	Approvers   []string        `json:"approvers"`
	TwoPerson   bool            `json:"two_person"`
	RequestedBy string          `json:"requested_by"`
	CreatedAt   time.Time       `json:"created_at"`
	ExpiresAt   time.Time       `json:"expires_at,omitzero"`
}

// PlanDocOf is where a plan stands as runbot plans' JSON shows it.
func PlanDocOf(s remediation.Standing) PlanDoc {
	p := s.Plan
	return PlanDoc{PlanID: p.ID, RunID: p.RunID, Runbook: s.Runbook, Remediation: p.Remediation, Deployment: p.Deployment,
		Diagnosis: p.Diagnosis, State: p.State, Hash: p.Hash, Approvals: s.Approvals, Needed: p.Policy.Needed(),
		Approvers: p.Policy.Approvers, TwoPerson: p.Policy.TwoPerson, RequestedBy: p.RequestedBy, CreatedAt: p.CreatedAt,
		ExpiresAt: p.Policy.ExpiresAt}
}

// PlansJSON writes plans as runbot plans --format json lists them: one
// array of PlanDoc, on one line.
func PlansJSON(w io.Writer, plans []remediation.Standing) error {
	docs := make([]PlanDoc, len(plans))
	for i, s := range plans {
		docs[i] = PlanDocOf(s)
	}
	return json.NewEncoder(w).Encode(docs)
}

// PlanJSON writes one plan as runbot plans PLAN --format json shows it:
// its PlanDoc and, under "plan", its body, indented.
func PlanJSON(w io.Writer, s remediation.Standing, b remediation.PlanBody) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		PlanDoc
		Body remediation.PlanBody `json:"plan"`
	}{PlanDocOf(s), b})
}
