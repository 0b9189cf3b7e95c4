package runbooks

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/expr-lang/expr/file"

	"github.com/runbot/runbot/internal/step"
	"github.com/runbot/runbot/runbooks/tmpl"
)

// envValue builds the expression environment from a report.
func (rb *Runbook) envValue(rep *Report, params map[string]any, findings map[string]bool, now time.Time) reflect.Value {
	e := rb.env
	root := reflect.New(e.root).Elem()
	pv := root.Field(0)
	for name, i := range e.paramIdx {
		if v, ok := params[name]; ok && v != nil {
			pv.Field(i).Set(reflect.ValueOf(v).Convert(pv.Field(i).Type()))
		}
	}
	sv := root.Field(1)
	for _, s := range rb.Steps {
		runs := rep.StepRuns(s.ID)
		roles := make([]string, len(runs))
		for i, r := range runs {
			roles[i] = r.Target
		}
		sv.Field(e.stepIdx[s.ID]).Set(e.stepTypes[s.ID].value(runs, roles))
	}
	fv := root.Field(2)
	for id, ok := range findings {
		if i, has := e.findIdx[id]; has {
			fv.Field(i).SetBool(ok)
		}
	}
	root.Field(3).Set(reflect.ValueOf(now))
	return root
}

// unranReason says why an expression cannot be evaluated: a step it reads
// did not run. Empty when every referenced step ran.
func unranReason(rep *Report, refs []stepRef) string {
	for _, r := range refs {
		runs := rep.StepRuns(r.Step)
		if len(runs) == 0 {
			return fmt.Sprintf("step %s was not part of this run", r.Step)
		}
		for _, tr := range runs {
			if r.Role != "" && tr.Target != r.Role {
				continue
			}
			if !tr.Status.Ran() {
				msg := tr.Error
				if msg == "" {
					msg = string(tr.Status)
				}
				return fmt.Sprintf("step %s on %s did not run: %s", r.Step, tr.Target, msg)
			}
		}
	}
	return ""
}

// Evaluate computes findings and diagnoses into the report. A finding that
// reads a step which did not run is inconclusive, never false and never
// true: a dead SSH connection must not look like "0 bytes received".
//
// It also writes the ages the steps' evidence marks (step.Ago) as of now,
// the run's end: each step read at its own moment, and a log line two
// findings quote must show one age wherever the report shows it.
func (rb *Runbook) Evaluate(rep *Report, params map[string]any, now time.Time) {
	for _, tr := range rep.Steps {
		tr.Evidence = step.AgesOf(tr.Evidence, now)
	}
	// Empty lists, not null, in JSON: consumers iterate them.
	rep.Findings, rep.Diagnoses = []FindingResult{}, []DiagnosisResult{}
	held := map[string]bool{}
	unknown := map[string]string{}
	env := rb.envValue(rep, params, held, now)
	for _, f := range rb.Findings {
		if reason := unranReason(rep, f.refs); reason != "" {
			unknown[f.ID] = reason
			rep.Inconclusive = append(rep.Inconclusive, FindingResult{ID: f.ID, Severity: f.Severity, Reason: reason})
			continue
		}
		ok, err := evalBool(f.program, env.Interface())
		if err != nil {
			// Every step it reads ran: the expression itself failed on
			// what they saw (int("") of an empty extract), which the
			// reason says with the values, so no one looks for a step
			// that did not run.
			reason := "the expression could not be evaluated: " + oneLineErr(err)
			if read := describeReads(env, f.reads); read != "" {
				reason += "; it read " + read
			}
			unknown[f.ID] = reason
			rep.Inconclusive = append(rep.Inconclusive, FindingResult{ID: f.ID, Severity: f.Severity, Reason: reason, ExpressionFailed: true})
			continue
		}
		held[f.ID] = ok
	}
	env = rb.envValue(rep, params, held, now)
	data := toTemplateData(env)
	for _, f := range rb.Findings {
		if !held[f.ID] {
			continue
		}
		res := FindingResult{ID: f.ID, Severity: f.Severity, Summary: render(f.Summary, data, f.ID)}
		for _, sid := range f.Evidence {
			for _, tr := range rep.StepRuns(sid) {
				for _, line := range tr.Evidence {
					res.Evidence = append(res.Evidence, fmt.Sprintf("[%s@%s] %s", sid, tr.Target, line))
				}
			}
		}
		rep.Findings = append(rep.Findings, res)
	}
	for _, d := range rb.Diagnoses {
		if unranReason(rep, d.refs) != "" {
			continue
		}
		blocked := false
		for _, f := range d.findings {
			if _, ok := unknown[f]; ok {
				blocked = true
			}
		}
		if blocked {
			continue
		}
		ok, err := evalBool(d.program, env.Interface())
		if err != nil || !ok {
			continue
		}
		var fs []string
		for _, f := range d.findings {
			if held[f] {
				fs = append(fs, f)
			}
		}
		rep.Diagnoses = append(rep.Diagnoses, DiagnosisResult{ID: d.ID, Severity: d.Severity, Summary: render(d.Summary, data, d.ID), Remediation: pickRemediation(d, env.Interface(), rep), Findings: fs})
	}
	rep.Contradictions = rb.Contradictions(rep)
	rep.Undiagnosed = len(rb.Diagnoses) > 0 && len(rep.Diagnoses) == 0
	rep.Outcome = OutcomeOK
	for _, f := range rep.Findings {
		if f.Severity == Critical {
			rep.Outcome = OutcomeCritical
		}
	}
	for _, d := range rep.Diagnoses {
		if d.Severity == Critical {
			rep.Outcome = OutcomeCritical
		}
	}
	if rep.Outcome == OutcomeOK && (rep.Unobserved() || rep.Undiagnosed) {
		rep.Outcome = OutcomeInconclusive
	}
}

// EvalCondition evaluates a remediation condition against a report.
func (rb *Runbook) EvalCondition(c *Condition, rep *Report, params map[string]any, now time.Time) (bool, error) {
	if reason := unranReason(rep, c.refs); reason != "" {
		return false, fmt.Errorf("cannot evaluate %q: %s", c.Source, reason)
	}
	held := map[string]bool{}
	for _, f := range rep.Findings {
		held[f.ID] = true
	}
	return evalBool(c.program, rb.envValue(rep, params, held, now).Interface())
}

// oneLineErr is an evaluation error without the expression excerpt expr
// appends on further lines: the report quotes the values instead.
func oneLineErr(err error) string {
	var fe *file.Error
	if errors.As(err, &fe) {
		return fe.Message
	}
	msg, _, _ := strings.Cut(err.Error(), "\n")
	return msg
}

func render(t *tmpl.Template, data any, fallback string) string {
	if t == nil {
		return fallback
	}
	s, err := t.Execute(data)
	if err != nil {
		return fallback + " (summary could not be rendered: " + err.Error() + ")"
	}
	return strings.TrimSpace(s)
}

// pickRemediation returns the diagnosis' remediation: the fixed one, or the
// first rule whose condition holds. A rule that cannot be evaluated (its
// steps did not run) is passed over: proposing a fix on a guess is worse
// than proposing none.
func pickRemediation(d *Diagnosis, env any, rep *Report) string {
	if d.Remediate != "" {
		return d.Remediate
	}
	for _, r := range d.Rules {
		if r.When == nil {
			return r.Use
		}
		if unranReason(rep, r.When.refs) != "" {
			continue
		}
		if ok, err := evalBool(r.When.program, env); err == nil && ok {
			return r.Use
		}
	}
	return ""
}
