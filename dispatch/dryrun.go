package dispatch

import (
	"context"
	"fmt"

	"github.com/runbot/runbot/chat"
	"github.com/runbot/runbot/runbooks/record"
	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/runview"
)

// DryRun shows what a plan would change without changing anything: the
// stored plan's diff and commands, checked against a fresh plan made from
// the targets' current state.
func (d *Dispatcher) DryRun(ctx context.Context, planID string) (chat.Message, error) {
	prop, err := d.current().rem.LoadProposal(ctx, planID)
	if err != nil {
		return chat.Message{}, fmt.Errorf("dry run of plan %s: %w", planID, err)
	}
	body := prop.Body
	m := chat.Message{Title: fmt.Sprintf("Dry run: %s on %s", body.Remediation, body.Deployment), Status: chat.StatusInfo, More: "runbot show " + prop.Plan.RunID, Run: prop.Plan.RunID}
	m.Sections = runview.PlanSections(&body)
	if note := d.recheck(ctx, prop); note != "" {
		m.Sections = append(m.Sections, chat.Section{Status: chat.StatusWarning, Heading: "Re-check", Text: note})
	}
	m.Notes = []string{"Nothing was changed. Plan " + prop.Plan.ID + ", hash " + runview.ShortHash(prop.Plan.Hash) + "."}
	return m.Map(body.Scrubber()), nil
}

// recheck re-makes the plan from the targets' current state and says
// whether it still matches the one shown.
func (d *Dispatcher) recheck(ctx context.Context, prop *remediation.Proposal) string {
	run, err := d.store.GetRun(ctx, prop.Plan.RunID)
	if err != nil {
		return "could not re-check the targets: " + err.Error()
	}
	set := d.current()
	rb, err := set.catalog.Get(prop.Body.Runbook)
	if err != nil {
		return "could not re-check the targets: " + err.Error()
	}
	p, err := set.engine.Prepare(ctx, rb, prop.Body.Params)
	if err != nil {
		return "could not re-check the targets: " + err.Error()
	}
	rep, err := record.ReportOf(run)
	if err != nil {
		return "could not re-check the targets: " + err.Error()
	}
	fresh, err := set.rem.Plan(ctx, p, rep)
	switch {
	case err != nil:
		return "could not re-check the targets: " + err.Error()
	case fresh == nil:
		return "the run's diagnosis no longer proposes this remediation."
	case fresh.Hash() != prop.Plan.Hash:
		return "the targets changed since this plan was proposed: approving it will be refused when it is applied. Run the runbook again for a new plan."
	}
	return ""
}
