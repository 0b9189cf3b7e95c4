package schedule

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/runbot/runbot/chat"
	"github.com/runbot/runbot/runbooks/record"
	"github.com/runbot/runbot/runview"
	"github.com/runbot/runbot/store"
)

// fleetPlan is what one firing of a fleet audit says, per its policy
// evaluated deployment by deployment against each one's previous run.
type fleetPlan struct {
	Post   bool
	Reason string
	// Shown are the deployments the message names one by one.
	Shown []deploymentResult
	// NewOK are deployments audited for the first time and ok (on_change
	// names them in one line); Quiet the others the message only counts.
	NewOK []deploymentResult
	Quiet []deploymentResult
}

// baseline says whether the plan shows a first firing: every deployment
// shown, none with a previous run.
func (p fleetPlan) baseline(total int) bool {
	if len(p.Shown)+len(p.NewOK) != total {
		return false
	}
	for _, r := range p.Shown {
		if r.HasPrev || r.PrevErr != nil {
			return false
		}
	}
	return true
}

// planFleet applies a schedule's policy to a firing's results. Under
// on_change a deployment is shown when its signature differs from its own
// previous run's, or it has none and is not ok; one without a previous run
// that is ok is named in one line, so the first firing posts the fleet's
// baseline (what is covered and what is already wrong), and a deployment
// added later is announced once. on_failure shows the deployments that
// are not ok; always shows every one.
func planFleet(policy PostPolicy, results []deploymentResult) fleetPlan {
	var p fleetPlan
	for _, r := range results {
		switch {
		case policy == PostAlways:
			p.Shown = append(p.Shown, r)
		case policy == PostOnFailure && r.bad():
			p.Shown = append(p.Shown, r)
		case policy == PostOnFailure:
			p.Quiet = append(p.Quiet, r)
		case r.changed() && (r.HasPrev || r.PrevErr != nil || r.bad()):
			p.Shown = append(p.Shown, r)
		case r.changed():
			p.NewOK = append(p.NewOK, r)
		default:
			p.Quiet = append(p.Quiet, r)
		}
	}
	n := len(results)
	switch policy {
	case PostAlways:
		p.Post, p.Reason = true, fmt.Sprintf("posted on every run; %d deployment(s)", n)
	case PostOnFailure:
		p.Post = len(p.Shown) > 0
		p.Reason = fmt.Sprintf("%d of %d deployment(s) not ok", len(p.Shown), n)
	default:
		p.Post = len(p.Shown)+len(p.NewOK) > 0
		p.Reason = fmt.Sprintf("%d of %d deployment(s) changed", len(p.Shown)+len(p.NewOK), n)
		if !p.Post {
			p.Reason = fmt.Sprintf("no change in %d deployment(s)", n)
		}
	}
	return p
}

// postFleet posts a firing's one message, if its plan says so, and marks
// the runs it names as posted there.
func (s *Scheduler) postFleet(ctx context.Context, e *scheduled, results []deploymentResult) auditResult {
	res := auditResult{Fleet: results, Outcome: store.OutcomeOK}
	for _, r := range results {
		if outcomeRank[r.Outcome] > outcomeRank[res.Outcome] {
			res.Outcome = r.Outcome
		}
	}
	if ctx.Err() != nil {
		// A firing cut short (shutdown, its deadline) would report the
		// deployments it did not reach as changed.
		res.Reason = "not posted: the audit was cut short: " + context.Cause(ctx).Error()
		return res
	}
	plan := planFleet(e.Post, results)
	res.Reason = plan.Reason
	if !plan.Post {
		return res
	}
	m := fleetMessage(e, plan, len(results))
	if s.chat == nil {
		s.log.Info("fleet audit result (no chat configured)", "schedule", e.Name, "message", m.Text())
		return res
	}
	channel := e.Channel
	if channel == "" {
		channel = s.disp.Channel()
	}
	if channel == "" {
		res.Err = errors.New("no channel to post the fleet audit to (configure the schedule's or the bot's channel)")
		return res
	}
	pctx, cancel := record.WriteContext(ctx, "posting fleet audit "+e.Name)
	ref, err := s.chat.Post(pctx, channel, "", m)
	cancel()
	if err != nil {
		res.Err = fmt.Errorf("post the fleet audit: %w", err)
		return res
	}
	res.Posted = true
	// Every run of the firing knows the message that reported it (by name,
	// or counted among the unchanged), so that history finds it and the
	// daily summary counts the message even when the runs it names moved
	// on to their plan's reply below.
	for _, r := range slices.Concat(plan.Shown, plan.NewOK, plan.Quiet) {
		if r.RunID == "" {
			continue
		}
		sctx, cancel := record.WriteContext(ctx, "recording the message of run "+r.RunID)
		if err := s.store.SetRunMessage(sctx, r.RunID, store.MessageRef(ref)); err != nil {
			s.log.Warn("record run message", "run", r.RunID, "err", err)
		}
		cancel()
	}
	// A shown deployment whose diagnosis asks for a fix gets its plan,
	// with its approval buttons, as a reply under the firing's message:
	// seen there, it is the plan to approve, as a single audit's would be.
	for _, r := range plan.Shown {
		if len(r.Remediations) == 0 || r.report == nil {
			continue
		}
		if _, err := s.disp.ProposeInThread(ctx, r.run, r.params, r.report, channel, ref.ID); err != nil {
			s.log.Warn("fleet audit: remediation not proposed", "schedule", e.Name, "deployment", r.Deployment, "run", r.RunID, "err", err)
		}
	}
	return res
}

// outcomeRank orders outcomes from best to worst, for a firing's overall
// outcome.
var outcomeRank = map[store.Outcome]int{store.OutcomeOK: 0, store.OutcomeNone: 1, store.OutcomeInconclusive: 2, store.OutcomeError: 3, store.OutcomeCritical: 4}

// fleetMessage is a firing's one message: the deployments shown, each
// with its old and new signature and runs, and the rest counted.
func fleetMessage(e *scheduled, p fleetPlan, total int) chat.Message {
	var title string
	switch {
	case e.Post == PostAlways:
		title = fmt.Sprintf("%d deployment(s)", total)
	case e.Post == PostOnFailure:
		title = fmt.Sprintf("%d of %d deployment(s) not ok", len(p.Shown), total)
	case p.baseline(total):
		bad := 0
		for _, r := range p.Shown {
			if r.bad() {
				bad++
			}
		}
		title = fmt.Sprintf("first audit of %d deployment(s), %d not ok", total, bad)
	default:
		title = fmt.Sprintf("%d of %d deployment(s) changed", len(p.Shown)+len(p.NewOK), total)
	}
	m := chat.Message{
		Title:  fmt.Sprintf("Scheduled audit %q (%s): %s", e.Name, e.Cron, title),
		Status: chat.StatusOK,
		Facts: []chat.Fact{
			{Label: "Runbook", Text: e.Runbook, Code: true},
			{Label: "Deployments", Text: fmt.Sprintf("%s (%d)", e.Deployments, total), Code: true},
		},
	}
	sec := chat.Section{Heading: "Deployments", Status: chat.StatusOK}
	var remedies []string
	for _, r := range p.Shown {
		st := runview.RunOutcomeStatus(store.Run{Outcome: r.Outcome})
		if worse(st, sec.Status) {
			sec.Status = st
		}
		sec.Lines = append(sec.Lines, chat.Line{Status: st, Text: deploymentLine(r)})
		for _, rem := range r.Remediations {
			remedies = append(remedies, fmt.Sprintf("%s on %s", rem, r.Deployment))
		}
	}
	if len(p.NewOK) > 0 {
		names := make([]string, len(p.NewOK))
		for i, r := range p.NewOK {
			names[i] = r.Deployment
		}
		sec.Lines = append(sec.Lines, chat.Line{Status: chat.StatusOK, Text: "First audit, ok: " + strings.Join(names, ", ")})
	}
	if len(p.Quiet) > 0 {
		text := fmt.Sprintf("%d unchanged: %s", len(p.Quiet), countSignatures(p.Quiet))
		if e.Post == PostOnFailure {
			text = fmt.Sprintf("%d ok", len(p.Quiet))
		}
		sec.Lines = append(sec.Lines, chat.Line{Text: text})
	}
	m.Status = sec.Status
	m.Sections = append(m.Sections, sec)
	if len(remedies) > 0 {
		m.Notes = append(m.Notes, fmt.Sprintf("Remediation proposed in this message's thread, one plan per deployment: %s.", strings.Join(remedies, ", ")))
	}
	return m
}

// deploymentLine is one shown deployment: its old → new signature and
// the runs behind them.
func deploymentLine(r deploymentResult) string {
	cur := r.Signature
	switch {
	case r.Err != nil:
		cur += " (" + r.Err.Error() + ")"
	case r.Why != "":
		cur += " (could not run: " + r.Why + ")"
	}
	var from string
	switch {
	case r.PrevErr != nil:
		from = "previous run not read"
	case !r.HasPrev:
		from = "first audit"
	case r.Signature == r.Prev:
		from = "unchanged"
	default:
		from = r.Prev
	}
	line := fmt.Sprintf("%s: %s → %s", r.Deployment, from, cur)
	if from == "unchanged" {
		line = fmt.Sprintf("%s: %s (unchanged)", r.Deployment, cur)
	}
	var runs []string
	if r.RunID != "" {
		runs = append(runs, "run "+r.RunID)
	}
	if r.PrevRunID != "" && r.HasPrev {
		runs = append(runs, "was "+r.PrevRunID)
	}
	if len(runs) > 0 {
		line += " · " + strings.Join(runs, ", ")
	}
	return line
}

// countSignatures counts deployments by signature, most common first:
// "ok 3, critical (app_down) 1".
func countSignatures(rs []deploymentResult) string {
	counts := map[string]int{}
	for _, r := range rs {
		counts[r.Signature]++
	}
	sigs := slices.Sorted(maps.Keys(counts))
	slices.SortStableFunc(sigs, func(a, b string) int { return counts[b] - counts[a] })
	parts := make([]string, len(sigs))
	for i, sig := range sigs {
		parts[i] = fmt.Sprintf("%s %d", sig, counts[sig])
	}
	return strings.Join(parts, ", ")
}
