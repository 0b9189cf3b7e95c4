package runbooks

import (
	"time"

	"github.com/runbot/runbot/internal/run"
	"github.com/runbot/runbot/internal/step"
)

// Outcome summarises a run for exit codes and Slack colours. It is
// run.Outcome, the one type the store keeps a run's outcome in
// (store.Outcome) too; a report's is one of the three below.
type Outcome = run.Outcome

const (
	// OutcomeOK: every step ran and nothing critical was found.
	OutcomeOK = run.OutcomeOK
	// OutcomeCritical: a critical finding or diagnosis.
	OutcomeCritical = run.OutcomeCritical
	// OutcomeInconclusive: nothing critical, but the run cannot say the
	// service is fine: some findings could not be evaluated because their
	// steps did not run, or the runbook has diagnoses and none held
	// (Undiagnosed).
	OutcomeInconclusive = run.OutcomeInconclusive
)

// Trigger says what started a run: the command line, chat, an alert, the
// scheduler, or a remediation's precheck or verify run. It is run.Trigger,
// the one type the store keeps a run's trigger in (store.Trigger) too; its
// text is what reports and recordings carry.
type Trigger = run.Trigger

const (
	TriggerCLI      = run.TriggerCLI
	TriggerChat     = run.TriggerChat
	TriggerAlert    = run.TriggerAlert
	TriggerSchedule = run.TriggerSchedule
	// TriggerPrecheck is a remediation's run of the diagnosis right before
	// it applies a plan.
	TriggerPrecheck = run.TriggerPrecheck
	// TriggerVerify is a remediation's run of its verify steps after it
	// applied a plan.
	TriggerVerify = run.TriggerVerify
)

// Report is the complete record of one run: what ran where, what it saw,
// and what that means. It is what the CLI prints, the store keeps and the
// bot renders.
type Report struct {
	RunID      string            `json:"run_id"`
	Runbook    string            `json:"runbook"`
	Title      string            `json:"title,omitempty"`
	Trigger    Trigger           `json:"trigger,omitempty"`
	Params     map[string]string `json:"params"`
	StartedAt  time.Time         `json:"started_at"`
	FinishedAt time.Time         `json:"finished_at"`
	// VerdictAt is when the diagnoses were settled: as soon as the steps
	// finished by then decided every diagnosis, often before the slowest
	// probe returned; else when the run finished.
	VerdictAt time.Time       `json:"verdict_at"`
	Outcome   Outcome         `json:"outcome"`
	Steps     []*TargetRun    `json:"steps"`
	Findings  []FindingResult `json:"findings"`
	// Inconclusive lists findings that could not be evaluated, and why.
	Inconclusive []FindingResult   `json:"inconclusive,omitempty"`
	Diagnoses    []DiagnosisResult `json:"diagnoses"`
	// Undiagnosed says the runbook has diagnoses and none of them held:
	// what the run saw is a state the runbook does not cover, which is not
	// the same as a healthy one (a runbook says healthy with a diagnosis
	// of its own).
	Undiagnosed bool `json:"undiagnosed,omitempty"`
	// Contradictions are facts that two results holding together assert
	// and deny (see Runbook.Contradictions); a correct runbook has none.
	Contradictions []Contradiction `json:"contradictions,omitempty"`
}

// TargetRun is one step on one target.
type TargetRun struct {
	Step       string        `json:"id"`
	Check      string        `json:"check"`
	Target     string        `json:"target"`
	Host       string        `json:"host,omitempty"`
	Status     step.Status   `json:"status"`
	StartedAt  time.Time     `json:"started_at"`
	Duration   time.Duration `json:"-"`
	DurationMS int64         `json:"duration_ms"`
	Values     any           `json:"values,omitempty"`
	Evidence   []string      `json:"evidence,omitempty"`
	Events     []step.Event  `json:"events,omitempty"`
	Error      string        `json:"error,omitempty"`
	// ConnectError is the part of Error that says the step's host could
	// not be reached or would not let runbot in, as the SSH transport's
	// connect error says it; the engine sets it from that typed error, and
	// it is empty when the host was reached. It is not part of the JSON
	// form, which stays as reports were always written: a report read back
	// from JSON (the store's, a redacted copy) or replayed from a recording
	// has only Error, and failures.ConnectionError reads the text there.
	ConnectError string `json:"-"`
}

// FindingResult is a finding that held (or could not be evaluated).
type FindingResult struct {
	ID       string   `json:"id"`
	Severity Severity `json:"severity"`
	Summary  string   `json:"summary"`
	Evidence []string `json:"evidence"`
	// Reason says why an inconclusive finding could not be evaluated.
	Reason string `json:"reason,omitempty"`
	// ExpressionFailed says the steps it reads ran, and its expression
	// failed on what they saw (e.g. int("") of an empty value): the
	// runbook, not the target, is what to look at.
	ExpressionFailed bool `json:"expression_failed,omitempty"`
}

// DiagnosisResult is a diagnosis that held.
type DiagnosisResult struct {
	ID          string   `json:"id"`
	Severity    Severity `json:"severity"`
	Summary     string   `json:"summary"`
	Remediation string   `json:"remediation,omitempty"`
	Findings    []string `json:"findings,omitempty"`
}

// Critical reports whether the run found something critical.
func (r *Report) Critical() bool { return r.Outcome == OutcomeCritical }

// Unobserved reports whether some of what the runbook reads was not
// observed: a step did not run, or a finding could not be evaluated.
func (r *Report) Unobserved() bool {
	if len(r.Inconclusive) > 0 {
		return true
	}
	for _, s := range r.Steps {
		if !s.Status.Ran() {
			return true
		}
	}
	return false
}

// StepsNotRun reports whether a step did not run, or a finding could not
// be evaluated because a step it reads was not observed.
func (r *Report) StepsNotRun() bool {
	for _, s := range r.Steps {
		if !s.Status.Ran() {
			return true
		}
	}
	for _, f := range r.Inconclusive {
		if !f.ExpressionFailed {
			return true
		}
	}
	return false
}

// ExpressionFailed reports whether a finding's expression failed on what
// its steps saw.
func (r *Report) ExpressionFailed() bool {
	for _, f := range r.Inconclusive {
		if f.ExpressionFailed {
			return true
		}
	}
	return false
}

// StepRuns returns the runs of one step, in target order.
func (r *Report) StepRuns(id string) []*TargetRun {
	var out []*TargetRun
	for _, s := range r.Steps {
		if s.Step == id {
			out = append(out, s)
		}
	}
	return out
}
