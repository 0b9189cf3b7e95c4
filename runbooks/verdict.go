package runbooks

import (
	"slices"
	"time"

	"github.com/runbot/runbot/runbooks/tmpl"
)

// maxUnknown bounds how many findings a diagnosis may still be waiting for
// when it is settled early: every way they could turn out is tried, 2^n
// evaluations.
const maxUnknown = 10

// Settle reports what the steps finished so far already decide, so that a
// run can say its verdict before its slowest probe returns. A finding is
// known once every step it reads has finished. A diagnosis is decided when
// the steps it reads (in its condition, its summary and its remediation
// rules) have finished and its condition comes out the same whichever way
// the findings it still waits for turn out. The verdict is reached when
// every diagnosis is decided; the diagnoses it returns are then exactly
// those the complete evaluation will hold, because nothing they depend on
// can change any more.
func (rb *Runbook) Settle(rep *Report, done map[string]bool, params map[string]any, now time.Time) ([]DiagnosisResult, bool) {
	held := map[string]bool{}
	known := map[string]bool{}
	failed := map[string]bool{}
	env := rb.envValue(rep, params, held, now)
	for _, f := range rb.Findings {
		if !stepsDone(f.refs, done) {
			continue
		}
		if unranReason(rep, f.refs) != "" {
			failed[f.ID] = true
			continue
		}
		ok, err := evalBool(f.program, env.Interface())
		if err != nil {
			failed[f.ID] = true
			continue
		}
		known[f.ID], held[f.ID] = true, ok
	}

	var out []DiagnosisResult
	for _, d := range rb.Diagnoses {
		if !stepsDone(d.refs, done) || !stepsDone(d.summarySteps, done) {
			return nil, false
		}
		if unranReason(rep, d.refs) != "" || slices.ContainsFunc(d.findings, func(f string) bool { return failed[f] }) {
			// The complete evaluation does not hold it either.
			continue
		}
		var unknown []string
		for _, f := range d.findings {
			if !known[f] {
				unknown = append(unknown, f)
			}
		}
		holds, decided := rb.decided(d, unknown, rep, params, held, now)
		if !decided {
			return nil, false
		}
		if !holds {
			continue
		}
		for _, r := range d.Rules {
			if r.When != nil && (!stepsDone(r.When.refs, done) || slices.ContainsFunc(r.When.findings, func(f string) bool { return !known[f] && !failed[f] })) {
				return nil, false
			}
		}
		env := rb.envValue(rep, params, held, now)
		var fs []string
		for _, f := range d.findings {
			if held[f] {
				fs = append(fs, f)
			}
		}
		out = append(out, DiagnosisResult{ID: d.ID, Severity: d.Severity, Summary: render(d.Summary, toTemplateData(env), d.ID),
			Remediation: pickRemediation(d, env.Interface(), rep), Findings: fs})
	}
	return out, true
}

// decided evaluates d under every assignment of the unknown findings and
// reports the common result, if there is one.
func (rb *Runbook) decided(d *Diagnosis, unknown []string, rep *Report, params map[string]any, held map[string]bool, now time.Time) (holds, ok bool) {
	if len(unknown) > maxUnknown {
		return false, false
	}
	try := make(map[string]bool, len(held)+len(unknown))
	for mask := range 1 << len(unknown) {
		clear(try)
		for k, v := range held {
			try[k] = v
		}
		for i, f := range unknown {
			try[f] = mask&(1<<i) != 0
		}
		got, err := evalBool(d.program, rb.envValue(rep, params, try, now).Interface())
		if err != nil {
			return false, false
		}
		if mask == 0 {
			holds = got
		} else if got != holds {
			return false, false
		}
	}
	return holds, true
}

func stepsDone(refs []stepRef, done map[string]bool) bool {
	for _, r := range refs {
		if !done[r.Step] {
			return false
		}
	}
	return true
}

// templateSteps lists the steps a template reads as .steps.ID…, so that a
// summary is not shown before what it quotes has been measured.
func templateSteps(t *tmpl.Template) []stepRef {
	var out []stepRef
	for _, f := range t.AllFields() {
		if len(f) >= 2 && f[0] == "steps" {
			out = append(out, stepRef{Step: f[1]})
		}
	}
	return out
}
