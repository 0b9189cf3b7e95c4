package bot

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/runbot/runbot/internal/step"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/store"
)

// Action ids of the approval buttons.
const (
	actionApprove = "runbot_approve"
	actionDeny    = "runbot_deny"
	actionDryRun  = "runbot_dryrun"
)

// view renders the run's message. Callers hold rs.mu.
func (rs *runState) view() Message {
	m := Message{Title: rs.title, Status: rs.status(), More: "runbot show " + rs.run.ID}
	m.Facts = runFacts(rs.run, rs.report)
	if rs.report == nil {
		m.Sections = append(m.Sections, rs.verdictSections()...)
		m.Sections = append(m.Sections, rs.stepsSection(true))
	} else {
		m.Sections = append(m.Sections, reportSections(rs.report)...)
		m.Sections = append(m.Sections, rs.stepsSection(false))
	}
	if rs.problem != "" {
		m.Sections = append(m.Sections, Section{Heading: "Problem", Status: StatusError, Text: rs.problem})
	}
	if rs.proposal != nil {
		m.Sections = append(m.Sections, rs.proposalSection())
		if rs.plan.State == store.PlanProposed {
			m.Buttons = approvalButtons(rs.proposal, rs.plan)
		}
	}
	if rs.applying || rs.result != nil || rs.applyErr != "" {
		m.Sections = append(m.Sections, rs.applySection())
	}
	m.Notes = append(m.Notes, rs.notes...)
	return m
}

// verdictSections show the diagnoses that the steps finished so far
// already decide, before the slowest steps are done. Callers hold rs.mu.
func (rs *runState) verdictSections() []Section {
	if rs.verdictAt.IsZero() {
		return nil
	}
	after := rs.verdictAt.Sub(rs.run.StartedAt).Round(100 * time.Millisecond)
	if len(rs.verdict) == 0 {
		return []Section{{Heading: fmt.Sprintf("No diagnosis holds (settled after %s); the rest of the evidence is still arriving.", after), Status: StatusInfo}}
	}
	var out []Section
	for _, d := range rs.verdict {
		s := Section{Heading: "Diagnosis: " + d.Summary, Status: severityStatus(d.Severity),
			Lines: []Line{{Text: fmt.Sprintf("settled after %s by the steps finished so far; the rest of the evidence is still arriving", after)}}}
		if len(d.Findings) > 0 {
			s.Lines = append(s.Lines, Line{Text: "based on: " + strings.Join(d.Findings, ", ")})
		}
		out = append(out, s)
	}
	return out
}

func (rs *runState) status() Status {
	switch {
	case rs.report != nil:
		return outcomeStatus(rs.report.Outcome)
	case rs.problem != "":
		return StatusError
	}
	return StatusRunning
}

func outcomeStatus(o runbooks.Outcome) Status {
	switch o {
	case runbooks.OutcomeOK:
		return StatusOK
	case runbooks.OutcomeCritical:
		return StatusCritical
	case runbooks.OutcomeInconclusive:
		return StatusInconclusive
	}
	return StatusNone
}

func severityStatus(s runbooks.Severity) Status {
	switch s {
	case runbooks.Critical:
		return StatusCritical
	case runbooks.Warning:
		return StatusWarning
	}
	return StatusInfo
}

func runFacts(run store.Run, rep *runbooks.Report) []Fact {
	facts := []Fact{{Label: "Run", Text: run.ID, Code: true}}
	if run.Trigger == store.TriggerSlack {
		facts = append(facts, Fact{Label: "Requested by", User: run.RequestedBy})
	} else {
		facts = append(facts, Fact{Label: "Trigger", Text: strings.TrimSpace(string(run.Trigger) + " " + run.RequestedBy)})
	}
	if p := paramText(run.Params); p != "" {
		facts = append(facts, Fact{Label: "Params", Text: p, Code: true})
	}
	if rep != nil && !rep.FinishedAt.IsZero() {
		facts = append(facts, Fact{Label: "Took", Text: rep.FinishedAt.Sub(rep.StartedAt).Round(time.Millisecond).String()})
	}
	return facts
}

// paramText shows params as key=value, sorted, leaving out empty ones.
func paramText(params map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(params)) {
		if params[k] != "" {
			parts = append(parts, k+"="+params[k])
		}
	}
	return strings.Join(parts, " ")
}

// reportSections shows the diagnoses, then each finding with its evidence,
// then what could not be decided.
func reportSections(rep *runbooks.Report) []Section {
	var out []Section
	for _, d := range rep.Diagnoses {
		s := Section{Heading: "Diagnosis: " + d.Summary, Status: severityStatus(d.Severity)}
		if len(d.Findings) > 0 {
			s.Lines = append(s.Lines, Line{Text: "based on: " + strings.Join(d.Findings, ", ")})
		}
		out = append(out, s)
	}
	for _, f := range rep.Findings {
		s := Section{Heading: f.Summary, Status: severityStatus(f.Severity)}
		for _, e := range f.Evidence {
			s.Lines = append(s.Lines, Line{Text: e})
		}
		out = append(out, s)
	}
	if len(rep.Inconclusive) > 0 {
		s := Section{Heading: "Could not decide", Status: StatusInconclusive}
		for _, f := range rep.Inconclusive {
			s.Lines = append(s.Lines, Line{Text: f.ID + ": " + f.Reason})
		}
		out = append(out, s)
	}
	if len(rep.Findings) == 0 && len(rep.Diagnoses) == 0 && len(rep.Inconclusive) == 0 {
		out = append(out, Section{Heading: "Nothing found", Status: StatusOK})
	}
	return out
}

// stepsSection lists every step run while the run goes; afterwards only
// the ones that did not run, under a count.
func (rs *runState) stepsSection(live bool) Section {
	s := Section{Heading: "Steps"}
	total, ran := 0, 0
	for _, id := range rs.stepOrder {
		runs := rs.steps[id]
		if len(runs) == 0 && live {
			s.Lines = append(s.Lines, Line{Status: StatusPending, Text: id + ": waiting"})
		}
		for _, tr := range runs {
			total++
			if tr.Status.Ran() {
				ran++
			}
			if live || (tr.Status != "" && !tr.Status.Ran()) {
				s.Lines = append(s.Lines, stepLine(tr))
			}
		}
	}
	if !live {
		s.Text = fmt.Sprintf("%d of %d step runs completed.", ran, total)
	}
	return s
}

func stepLine(tr *runbooks.TargetRun) Line {
	where := tr.Target
	if tr.Host != "" && tr.Host != tr.Target {
		where += "@" + tr.Host
	}
	text := tr.Step + " on " + where
	switch tr.Status {
	case "":
		return Line{Status: StatusRunning, Text: text + ": running"}
	case step.OK:
		d := tr.Duration
		if d == 0 {
			// A report read back from the store keeps only milliseconds.
			d = time.Duration(tr.DurationMS) * time.Millisecond
		}
		return Line{Status: StatusOK, Text: fmt.Sprintf("%s: ok in %s", text, d.Round(time.Millisecond))}
	case step.Skipped:
		return Line{Status: StatusSkipped, Text: text + ": skipped: " + tr.Error}
	}
	return Line{Status: StatusError, Text: fmt.Sprintf("%s: %s: %s", text, tr.Status, tr.Error)}
}

func (rs *runState) proposalSection() Section {
	p, body := rs.plan, rs.proposal.Body
	s := Section{Heading: fmt.Sprintf("Proposed remediation: %s on %s", body.Remediation, body.Deployment), Status: planStatus(p.State)}
	for _, a := range body.Actions {
		text := a.Plan.Summary
		if a.Plan.NoOp {
			text += " (already in place)"
		}
		s.Lines = append(s.Lines, Line{Text: text})
	}
	pol := p.Policy
	need := fmt.Sprintf("needs %d approval(s) from %s", pol.Needed(), strings.Join(pol.Approvers, ", "))
	if pol.TwoPerson {
		need += "; two-person rule: the requester cannot approve"
	}
	if !pol.ExpiresAt.IsZero() {
		need += "; expires " + pol.ExpiresAt.UTC().Format("15:04 MST")
	}
	s.Lines = append(s.Lines, Line{Text: need})
	if len(body.Actions) > 0 {
		s.Lines = append(s.Lines, Line{Text: body.RollbackPlan()})
	}
	var approved, denied []string
	for _, a := range rs.approvals {
		if a.PlanHash != p.Hash {
			continue
		}
		if a.Decision == store.Approve {
			approved = append(approved, a.User)
		} else {
			denied = append(denied, a.User)
		}
	}
	if len(approved) > 0 {
		s.Lines = append(s.Lines, Line{Status: StatusApproved, Text: fmt.Sprintf("Approved (%d of %d) by", len(approved), pol.Needed()), Users: approved})
	}
	if len(denied) > 0 {
		s.Lines = append(s.Lines, Line{Status: StatusDenied, Text: "Denied by", Users: denied})
	}
	switch p.State {
	case store.PlanExpired, store.PlanSuperseded, store.PlanInterrupted:
		// The other states show in the approvals or the apply section.
		s.Lines = append(s.Lines, Line{Text: "Plan is " + strings.ReplaceAll(string(p.State), "_", " ")})
	}
	if body.Escalate != "" {
		s.Lines = append(s.Lines, Line{Status: StatusWarning, Text: body.Escalate})
	}
	return s
}

func planStatus(s store.PlanState) Status {
	switch s {
	case store.PlanProposed:
		return StatusWaiting
	case store.PlanApproved, store.PlanApplying, store.PlanVerifying:
		return StatusApproved
	case store.PlanDone, store.PlanNotNeeded:
		return StatusOK
	case store.PlanDenied:
		return StatusDenied
	case store.PlanExpired, store.PlanSuperseded:
		return StatusSkipped
	}
	return StatusError
}

// approvalButtons carry the plan id and the hash of the plan shown, so an
// approval is bound to exactly what the approver saw.
func approvalButtons(prop *runbooks.Proposal, p store.Plan) []Button {
	value := p.ID + "|" + p.Hash
	return []Button{
		{ID: actionApprove, Label: "Approve", Value: value, Style: StylePrimary,
			Confirm: fmt.Sprintf("Approve %s on %s? It runs once enough approvers agree.", prop.Body.Remediation, prop.Body.Deployment)},
		{ID: actionDeny, Label: "Deny", Value: value, Style: StyleDanger},
		{ID: actionDryRun, Label: "Dry-run diff", Value: value},
	}
}

func (rs *runState) applySection() Section {
	s := Section{Heading: "Remediation: applying", Status: StatusRunning}
	for _, ev := range rs.apply {
		s.Lines = append(s.Lines, Line{Text: ev.Stage + ": " + ev.Detail})
	}
	if r := rs.result; r != nil {
		s.Heading = "Remediation: " + strings.ReplaceAll(string(r.State), "_", " ")
		s.Status = planStatus(r.State)
		if r.Message != "" {
			s.Lines = append(s.Lines, Line{Status: s.Status, Text: r.Message})
		}
		if r.Verify != nil {
			for _, f := range r.Verify.Findings {
				s.Lines = append(s.Lines, Line{Status: severityStatus(f.Severity), Text: "after the fix: " + f.Summary})
			}
		}
	}
	if rs.applyErr != "" {
		s.Status = StatusError
		s.Lines = append(s.Lines, Line{Status: StatusError, Text: rs.applyErr})
	}
	return s
}
