// Package runview renders a run as its chat message: the diagnosis and
// evidence, the steps as they run, the proposed fix with its approvals and
// buttons, and what applying it did. The dispatch core keeps a State per
// run and re-renders it on every change; the demo and the report of a
// finished run render one with Preview. It decides nothing and knows no
// chat platform: a platform draws the chat.Message.
package runview

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/runbot/runbot/chat"
	"github.com/runbot/runbot/internal/step"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/failures"
	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/store"
)

// Action ids of the approval buttons.
const (
	ActionApprove = "runbot_approve"
	ActionDeny    = "runbot_deny"
	ActionDryRun  = "runbot_dryrun"
)

// Message renders the run's message.
func (rs *State) Message() chat.Message {
	m := chat.Message{Title: rs.Title, Status: rs.Status(), More: "runbot show " + rs.Run.ID, Run: rs.Run.ID}
	m.Facts = runFacts(rs.Run, rs.Report)
	m.Sections = append(m.Sections, rs.unreachableSections()...)
	if rs.Report == nil {
		m.Sections = append(m.Sections, rs.verdictSections()...)
		m.Sections = append(m.Sections, rs.stepsSection(true))
	} else {
		m.Sections = append(m.Sections, reportSections(rs.Report)...)
		m.Sections = append(m.Sections, rs.stepsSection(false))
	}
	if rs.Problem != "" {
		m.Sections = append(m.Sections, chat.Section{Heading: "Problem", Status: chat.StatusError, Text: rs.Problem})
	}
	if rs.Proposal != nil {
		m.Sections = append(m.Sections, rs.proposalSection())
		// A plan its guardrails refused when it was proposed gets no
		// buttons: its section says why and what to do instead.
		if rs.Plan.State == store.PlanProposed && rs.Proposal.Body.Blocked == "" {
			m.Buttons = approvalButtons(rs.Proposal, rs.Plan)
		}
	}
	if rs.Applying || rs.Result != nil || rs.ApplyErr != "" {
		m.Sections = append(m.Sections, rs.applySection())
	}
	m.Notes = append(m.Notes, rs.Notes...)
	if rs.Proposal != nil && len(rs.Proposal.Body.Secret) > 0 {
		// The plan holds its secret params' values, as applying it needs
		// them; its commands, diffs and what applying printed may quote
		// them. The run's report and params hide them already.
		m = m.Map(rs.Proposal.Body.Scrubber())
	}
	return m
}

// verdictSections show the diagnoses that the steps finished so far
// already decide, before the slowest steps are done.
func (rs *State) verdictSections() []chat.Section {
	if rs.VerdictAt.IsZero() {
		return nil
	}
	after := rs.VerdictAt.Sub(rs.Run.StartedAt).Round(100 * time.Millisecond)
	if len(rs.Verdict) == 0 {
		return []chat.Section{{Heading: fmt.Sprintf("No diagnosis holds (settled after %s); the rest of the evidence is still arriving.", after), Status: chat.StatusInfo}}
	}
	var out []chat.Section
	for _, d := range rs.Verdict {
		s := chat.Section{Heading: "Diagnosis: " + d.Summary, Status: SeverityStatus(d.Severity),
			Lines: []chat.Line{{Text: fmt.Sprintf("settled after %s by the steps finished so far; the rest of the evidence is still arriving", after)}}}
		if len(d.Findings) > 0 {
			s.Lines = append(s.Lines, chat.Line{Text: "based on: " + strings.Join(d.Findings, ", ")})
		}
		out = append(out, s)
	}
	return out
}

// Status is the message's status icon: the outcome once the report is
// in, an error when the run failed, running before.
func (rs *State) Status() chat.Status {
	switch {
	case rs.Report != nil:
		return OutcomeStatus(rs.Report.Outcome)
	case rs.Problem != "":
		return chat.StatusError
	}
	return chat.StatusRunning
}

// OutcomeStatus is the status icon of a run outcome.
func OutcomeStatus(o runbooks.Outcome) chat.Status {
	switch o {
	case runbooks.OutcomeOK:
		return chat.StatusOK
	case runbooks.OutcomeCritical:
		return chat.StatusCritical
	case runbooks.OutcomeInconclusive:
		return chat.StatusInconclusive
	}
	return chat.StatusNone
}

// SeverityStatus is the status icon of a finding severity.
func SeverityStatus(s runbooks.Severity) chat.Status {
	switch s {
	case runbooks.Critical:
		return chat.StatusCritical
	case runbooks.Warning:
		return chat.StatusWarning
	}
	return chat.StatusInfo
}

func runFacts(run store.Run, rep *runbooks.Report) []chat.Fact {
	facts := []chat.Fact{{Label: "Run", Text: run.ID, Code: true}}
	if run.Trigger == store.TriggerChat {
		facts = append(facts, chat.Fact{Label: "Requested by", User: run.RequestedBy})
	} else {
		facts = append(facts, chat.Fact{Label: "Trigger", Text: strings.TrimSpace(string(run.Trigger) + " " + run.RequestedBy)})
	}
	if p := ParamText(run.Params); p != "" {
		facts = append(facts, chat.Fact{Label: "Params", Text: p, Code: true})
	}
	if rep != nil && !rep.FinishedAt.IsZero() {
		facts = append(facts, chat.Fact{Label: "Took", Text: rep.FinishedAt.Sub(rep.StartedAt).Round(time.Millisecond).String()})
		// The evidence and summaries count every "… ago" to the run's
		// end, so one log line has one age wherever the message quotes it.
		facts = append(facts, chat.Fact{Label: "Ages as of", Text: "the run's end, " + rep.FinishedAt.UTC().Format("15:04:05") + " UTC"})
	}
	return facts
}

// ParamText shows params as key=value, sorted, leaving out empty ones.
func ParamText(params map[string]string) string {
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
func reportSections(rep *runbooks.Report) []chat.Section {
	var out []chat.Section
	for _, d := range rep.Diagnoses {
		s := chat.Section{Heading: "Diagnosis: " + d.Summary, Status: SeverityStatus(d.Severity)}
		if len(d.Findings) > 0 {
			s.Lines = append(s.Lines, chat.Line{Text: "based on: " + strings.Join(d.Findings, ", ")})
		}
		out = append(out, s)
	}
	for _, f := range rep.Findings {
		s := chat.Section{Heading: f.Summary, Status: SeverityStatus(f.Severity)}
		for _, e := range f.Evidence {
			s.Lines = append(s.Lines, chat.Line{Text: e})
		}
		out = append(out, s)
	}
	if len(rep.Inconclusive) > 0 {
		s := chat.Section{Heading: "Could not decide", Status: chat.StatusInconclusive}
		for _, f := range rep.Inconclusive {
			s.Lines = append(s.Lines, chat.Line{Text: f.ID + ": " + f.Reason})
		}
		out = append(out, s)
	}
	if rep.Undiagnosed && !rep.Unobserved() {
		// Not "nothing found": the runbook covers no state like this one.
		out = append(out, chat.Section{Heading: "No diagnosis holds: the runbook does not cover what it saw. Look at the evidence.", Status: chat.StatusInconclusive})
	} else if len(rep.Findings) == 0 && len(rep.Diagnoses) == 0 && len(rep.Inconclusive) == 0 {
		out = append(out, chat.Section{Heading: "Nothing found", Status: chat.StatusOK})
	}
	return out
}

// unreachableSections say first, one section a host, which hosts could
// not be reached: a host that is down fails every step there with the same
// error, and without this the message would open with that error many
// times. While the run goes they read the step runs finished so far.
func (rs *State) unreachableSections() []chat.Section {
	var hosts []failures.Host
	if rs.Report != nil {
		hosts = failures.Unreachable(rs.Report.Steps)
	} else {
		hosts = failures.Unreachable(rs.orderedRuns())
	}
	var out []chat.Section
	for _, h := range hosts {
		line := h.String()
		out = append(out, chat.Section{Heading: strings.ToUpper(line[:1]) + line[1:], Status: chat.StatusError})
	}
	return out
}

// orderedRuns are the step runs seen so far, in runbook order.
func (rs *State) orderedRuns() []*runbooks.TargetRun {
	var out []*runbooks.TargetRun
	for _, id := range rs.StepOrder {
		out = append(out, rs.Steps[id]...)
	}
	return out
}

// stepsSection lists every step run while the run goes; afterwards only
// the ones that did not run, under a count. The runs that failed the same
// way on one host show as one line where the first of them would be.
func (rs *State) stepsSection(live bool) chat.Section {
	s := chat.Section{Heading: "Steps"}
	total, ran := 0, 0
	foldOf := map[*runbooks.TargetRun]*failures.Group{}
	for _, g := range failures.Groups(rs.orderedRuns()) {
		if g.Folded() {
			for _, tr := range g.Runs {
				foldOf[tr] = &g
			}
		}
	}
	for _, id := range rs.StepOrder {
		runs := rs.Steps[id]
		if len(runs) == 0 && live {
			s.Lines = append(s.Lines, chat.Line{Status: chat.StatusPending, Text: id + ": waiting"})
		}
		for _, tr := range runs {
			total++
			if tr.Status.Ran() {
				ran++
			}
			if g := foldOf[tr]; g != nil {
				if g.Runs[0] == tr {
					s.Lines = append(s.Lines, foldLine(g))
				}
				continue
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

// foldLine is the one line of step runs that failed the same way on one
// host, with the status icon their first run would have.
func foldLine(g *failures.Group) chat.Line {
	status := chat.StatusError
	if g.Runs[0].Status == step.Skipped {
		status = chat.StatusSkipped
	}
	return chat.Line{Status: status, Text: g.Line()}
}

func stepLine(tr *runbooks.TargetRun) chat.Line {
	where := tr.Target
	if tr.Host != "" && tr.Host != tr.Target {
		where += "@" + tr.Host
	}
	text := tr.Step + " on " + where
	switch tr.Status {
	case "":
		return chat.Line{Status: chat.StatusRunning, Text: text + ": running"}
	case step.OK:
		d := tr.Duration
		if d == 0 {
			// A report read back from the store keeps only milliseconds.
			d = time.Duration(tr.DurationMS) * time.Millisecond
		}
		return chat.Line{Status: chat.StatusOK, Text: fmt.Sprintf("%s: ok in %s", text, d.Round(time.Millisecond))}
	case step.Skipped:
		return chat.Line{Status: chat.StatusSkipped, Text: text + ": skipped: " + tr.Error}
	}
	return chat.Line{Status: chat.StatusError, Text: fmt.Sprintf("%s: %s: %s", text, tr.Status, tr.Error)}
}

func (rs *State) proposalSection() chat.Section {
	p, body := rs.Plan, rs.Proposal.Body
	s := chat.Section{Heading: fmt.Sprintf("Proposed remediation: %s on %s", body.Remediation, body.Deployment), Status: planStatus(p.State)}
	for _, a := range body.Actions {
		text := a.Plan.Summary
		if a.Plan.NoOp {
			text += " (already in place)"
		}
		s.Lines = append(s.Lines, chat.Line{Text: text})
	}
	pol := p.Policy
	need := fmt.Sprintf("needs %d approval(s) from %s", pol.Needed(), strings.Join(pol.Approvers, ", "))
	if pol.TwoPerson {
		need += "; two-person rule: the requester cannot approve"
	}
	if !pol.ExpiresAt.IsZero() {
		need += "; expires " + pol.ExpiresAt.UTC().Format("15:04 MST")
	}
	s.Lines = append(s.Lines, chat.Line{Text: need})
	if len(body.Actions) > 0 {
		s.Lines = append(s.Lines, chat.Line{Text: body.RollbackPlan()})
	}
	var approved, denied []string
	for _, a := range rs.Approvals {
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
		s.Lines = append(s.Lines, chat.Line{Status: chat.StatusApproved, Text: fmt.Sprintf("Approved (%d of %d) by", len(approved), pol.Needed()), Users: approved})
	}
	if len(denied) > 0 {
		s.Lines = append(s.Lines, chat.Line{Status: chat.StatusDenied, Text: "Denied by", Users: denied})
	}
	switch p.State {
	case store.PlanExpired, store.PlanSuperseded, store.PlanInterrupted:
		// The other states show in the approvals or the apply section.
		s.Lines = append(s.Lines, chat.Line{Text: "Plan is " + strings.ReplaceAll(string(p.State), "_", " ")})
	}
	if body.Blocked != "" && p.State == store.PlanProposed {
		s.Status = chat.StatusError
		s.Lines = append(s.Lines, chat.Line{Status: chat.StatusError, Text: "Cannot be applied: " + body.Blocked})
	}
	if body.Escalate != "" {
		s.Lines = append(s.Lines, chat.Line{Status: chat.StatusWarning, Text: body.Escalate})
	}
	return s
}

func planStatus(s store.PlanState) chat.Status {
	switch s {
	case store.PlanProposed:
		return chat.StatusWaiting
	case store.PlanApproved, store.PlanApplying, store.PlanVerifying:
		return chat.StatusApproved
	case store.PlanDone, store.PlanNotNeeded:
		return chat.StatusOK
	case store.PlanDenied:
		return chat.StatusDenied
	case store.PlanExpired, store.PlanSuperseded:
		return chat.StatusSkipped
	}
	return chat.StatusError
}

// approvalButtons carry the plan id and the hash of the plan shown, so an
// approval is bound to exactly what the approver saw.
func approvalButtons(prop *remediation.Proposal, p store.Plan) []chat.Button {
	value := p.ID + "|" + p.Hash
	return []chat.Button{
		{ID: ActionApprove, Label: "Approve", Value: value, Style: chat.StylePrimary,
			Confirm: fmt.Sprintf("Approve %s on %s? It runs once enough approvers agree.", prop.Body.Remediation, prop.Body.Deployment)},
		{ID: ActionDeny, Label: "Deny", Value: value, Style: chat.StyleDanger},
		{ID: ActionDryRun, Label: "Dry-run diff", Value: value},
	}
}

func (rs *State) applySection() chat.Section {
	s := chat.Section{Heading: "Remediation: applying", Status: chat.StatusRunning}
	for _, ev := range rs.Apply {
		s.Lines = append(s.Lines, chat.Line{Text: string(ev.Stage) + ": " + ev.Detail})
	}
	if r := rs.Result; r != nil {
		s.Heading = "Remediation: " + strings.ReplaceAll(string(r.State), "_", " ")
		s.Status = planStatus(r.State)
		if r.Message != "" {
			s.Lines = append(s.Lines, chat.Line{Status: s.Status, Text: r.Message})
		}
		if r.Verify != nil {
			for _, f := range r.Verify.Findings {
				s.Lines = append(s.Lines, chat.Line{Status: SeverityStatus(f.Severity), Text: "after the fix: " + f.Summary})
			}
		}
	}
	if rs.ApplyErr != "" {
		s.Status = chat.StatusError
		s.Lines = append(s.Lines, chat.Line{Status: chat.StatusError, Text: rs.ApplyErr})
	}
	return s
}

// RunOutcomeStatus is the status icon of a stored run's outcome.
func RunOutcomeStatus(r store.Run) chat.Status {
	switch r.Outcome {
	case store.OutcomeOK:
		return chat.StatusOK
	case store.OutcomeCritical:
		return chat.StatusCritical
	case store.OutcomeInconclusive:
		return chat.StatusInconclusive
	}
	return chat.StatusError
}

// Verdict is a report in one line: its diagnoses, else its worst finding,
// else what the run says when nothing holds.
func Verdict(rep *runbooks.Report) string {
	if rep == nil {
		return ""
	}
	if len(rep.Diagnoses) > 0 {
		out := "Diagnosis: " + rep.Diagnoses[0].Summary
		if n := len(rep.Diagnoses) - 1; n > 0 {
			out += fmt.Sprintf(" (and %d more)", n)
		}
		return out
	}
	if sections := reportSections(rep); len(sections) > 0 {
		return sections[0].Heading
	}
	return string(rep.Outcome)
}
