package incident

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/store"
)

// maxEvidence is how many evidence lines of one finding the postmortem
// quotes: the key lines, not the whole record, which the run's page and
// `runbot show` keep.
const maxEvidence = 12

// Markdown writes the incident as a postmortem draft: a summary, the
// timeline of the incident (alert, diagnosis, approvals, actions,
// verification, resolution) in UTC, the key evidence of each finding and
// the remediation with its diff. reportURL, when set, is linked as where
// the full record is. The draft is written from redacted data by callers
// that show it to people (the web page); Markdown itself redacts nothing.
func (inc *Incident) Markdown(w io.Writer, reportURL string) error {
	md := &mdWriter{w: w}
	run := inc.Run
	md.f("# Postmortem draft: %s\n\n", inline(inc.Title()))
	md.f("_Drafted by runbot from run `%s` of runbook `%s`; every time is UTC. Edit before publishing._\n\n", code(run.ID), code(run.Runbook))
	if reportURL != "" {
		md.f("Full report: <%s>\n\n", reportURL)
	}

	md.s("## Summary\n\n")
	md.f("- **Trigger:** %s", inline(string(run.Trigger)))
	if run.RequestedBy != "" {
		md.f(" by %s", inline(run.RequestedBy))
	}
	if a := inc.Alert; a != nil {
		md.f(" (alert %s)", inline(a.Name()))
	}
	md.s("\n")
	if len(run.Params) > 0 {
		var ps []string
		for _, k := range slices.Sorted(maps.Keys(run.Params)) {
			ps = append(ps, "`"+code(k+"="+run.Params[k])+"`")
		}
		md.f("- **Params:** %s\n", strings.Join(ps, " "))
	}
	md.f("- **Started:** %s\n", stamp(run.StartedAt))
	if rep := inc.Report; rep != nil {
		md.f("- **Outcome:** %s\n", inline(string(rep.Outcome)))
		if len(rep.Diagnoses) == 0 {
			md.s("- **Diagnosis:** none held\n")
		}
		for _, d := range rep.Diagnoses {
			md.f("- **Diagnosis:** %s (`%s`, %s", inline(d.Summary), code(d.ID), d.Severity)
			if len(d.Findings) > 0 {
				md.f("; based on %s", inline(strings.Join(d.Findings, ", ")))
			}
			md.s(")\n")
		}
	} else {
		md.f("- **Outcome:** the run recorded no report (status %s)\n", inline(string(run.Status)))
	}
	md.f("- **Resolution:** %s\n\n", inline(inc.resolution()))

	md.s("## Timeline\n\n| Time (UTC) | What happened | Who |\n| --- | --- | --- |\n")
	for _, e := range inc.Timeline() {
		md.f("| %s | %s | %s |\n", e.At.Format("2006-01-02 15:04:05"), cell(e.Text), cell(e.Who))
	}
	md.s("\n")

	if rep := inc.Report; rep != nil && (len(rep.Findings) > 0 || len(rep.Inconclusive) > 0) {
		md.s("## Key evidence\n\n")
		for _, f := range rep.Findings {
			md.f("### %s (%s)\n\n", inline(f.Summary), f.Severity)
			md.evidence(f)
		}
		for _, f := range rep.Inconclusive {
			md.f("- Could not decide `%s`: %s\n", code(f.ID), inline(f.Reason))
		}
		if len(rep.Inconclusive) > 0 {
			md.s("\n")
		}
	}

	if len(inc.Plans) > 0 {
		md.s("## Remediation\n\n")
		for _, p := range inc.Plans {
			md.plan(p)
		}
	}
	md.s("## Follow-ups\n\n- [ ] Root cause beyond what runbot observed\n- [ ] What would have caught this sooner\n- [ ] Changes to the runbook or its thresholds\n")
	return md.err
}

// resolution says in one line how the incident ended: the last plan's
// outcome, or why there was nothing to remediate.
func (inc *Incident) resolution() string {
	if n := len(inc.Plans); n > 0 {
		p := inc.Plans[n-1]
		s := fmt.Sprintf("%s on %s: %s", p.Plan.Remediation, p.Plan.Deployment, words(string(p.Plan.State)))
		if p.Outcome != "" {
			s += " (" + p.Outcome + ")"
		}
		return s
	}
	if rep := inc.Report; rep != nil && rep.Critical() {
		return "no remediation was proposed; people took over"
	}
	return "nothing to remediate"
}

type mdWriter struct {
	w   io.Writer
	err error
}

func (m *mdWriter) s(s string) {
	if m.err == nil {
		_, m.err = io.WriteString(m.w, s)
	}
}

func (m *mdWriter) f(format string, args ...any) { m.s(fmt.Sprintf(format, args...)) }

func (m *mdWriter) evidence(f runbooks.FindingResult) {
	lines := f.Evidence
	more := 0
	if len(lines) > maxEvidence {
		lines, more = lines[:maxEvidence], len(lines)-maxEvidence
	}
	if len(lines) > 0 {
		m.block("", strings.Join(lines, "\n"))
	}
	if more > 0 {
		m.f("_%d more line(s) in the full report._\n\n", more)
	}
}

func (m *mdWriter) plan(p Plan) {
	pl := p.Plan
	m.f("### %s on %s: %s\n\n", inline(pl.Remediation), inline(pl.Deployment), words(string(pl.State)))
	m.f("Plan `%s` (hash `%.12s`) for `%s`, proposed %s, %s.\n\n", code(pl.ID), code(pl.Hash), code(dashed(pl.Diagnosis)), stamp(pl.CreatedAt), inline(needs(pl.Policy)))
	if b := p.Body; b != nil {
		for i, a := range b.Actions {
			m.f("%d. %s", i+1, inline(a.Plan.Summary))
			if a.Plan.NoOp {
				m.s(" (already in place)")
			}
			m.s("\n")
		}
		m.s("\n")
		if d := b.Diff(); d != "" {
			m.block("diff", d)
		}
		if len(b.Actions) > 0 {
			m.f("%s\n\n", inline(b.RollbackPlan()))
		}
	}
	for _, a := range p.Approvals {
		verb := "approved"
		if a.Decision == store.Deny {
			verb = "denied"
		}
		m.f("- %s by %s at %s\n", verb, inline(a.User), stamp(a.At))
	}
	for _, a := range p.Actions {
		m.f("- action %d `%s` on `%s`: %s\n", a.Index+1, code(a.Action), code(a.Target), words(string(a.State)))
	}
	if p.Outcome != "" {
		m.f("- outcome: %s\n", inline(p.Outcome))
	}
	m.s("\n")
}

// block writes text as a fenced code block whose fence is longer than any
// run of backticks in it, so that command output cannot close it early.
func (m *mdWriter) block(lang, text string) {
	fence := "```"
	for strings.Contains(text, fence) {
		fence += "`"
	}
	m.f("%s%s\n%s\n%s\n\n", fence, lang, strings.TrimRight(text, "\n"), fence)
}

// inline makes text safe as Markdown prose: one line, with the characters
// that would start formatting, links or HTML escaped.
func inline(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune("\\`*_[]<>|#~", r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// cell is inline text for a table cell.
func cell(s string) string { return inline(s) }

// code is text for inside a single-backtick span: one line, no backticks.
func code(s string) string {
	return strings.ReplaceAll(strings.Join(strings.Fields(s), " "), "`", "'")
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "unknown"
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}
