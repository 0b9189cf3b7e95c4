package remediation

import (
	"context"
	"encoding/json"

	"github.com/runbot/runbot/store"
)

// Standing is where a plan stands, as runbot plans lists it and runbot
// approve shows it before it votes: the plan, the runbook that proposed it
// (kept in the plan's body, which the store does not read) and how many
// approvals of its current hash it has so far.
type Standing struct {
	Plan      store.Plan
	Runbook   string
	Approvals int
}

// StandingOf reads where one plan stands from the approvals the store
// keeps.
func StandingOf(ctx context.Context, approvals store.ApprovalLog, p store.Plan) (Standing, error) {
	n, err := CountApprovals(ctx, approvals, p)
	if err != nil {
		return Standing{}, err
	}
	return Standing{Plan: p, Runbook: runbookOf(p), Approvals: n}, nil
}

// Standings is StandingOf for each of plans, in their order.
func Standings(ctx context.Context, approvals store.ApprovalLog, plans []store.Plan) ([]Standing, error) {
	out := make([]Standing, len(plans))
	for i, p := range plans {
		s, err := StandingOf(ctx, approvals, p)
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}

// CountApprovals counts what the store counts toward settling a plan: the
// distinct people who approved its current hash.
func CountApprovals(ctx context.Context, approvals store.ApprovalLog, p store.Plan) (int, error) {
	list, err := approvals.Approvals(ctx, p.ID)
	if err != nil {
		return 0, err
	}
	who := map[string]bool{}
	for _, a := range list {
		if a.Decision == store.Approve && a.PlanHash == p.Hash {
			who[a.User] = true
		}
	}
	return len(who), nil
}

// runbookOf is the runbook that proposed a plan, as its body says; "" for
// a body that does not say.
func runbookOf(p store.Plan) string {
	var body struct {
		Runbook string `json:"runbook"`
	}
	if json.Unmarshal(p.Body, &body) != nil {
		return ""
	}
	return body.Runbook
}
