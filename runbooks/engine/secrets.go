package engine

import (
	"github.com/runbot/runbot/internal/redact"
	"github.com/runbot/runbot/internal/secret"
	"github.com/runbot/runbot/runbooks"
)

// Secrets returns the values of p's secret params, for a sink that shows
// what the run printed by other means than its report (the CLI's output, a
// recording's tape).
func (p *Prepared) Secrets() []secret.Value { return p.Runbook.SecretValues(p.Text) }

// Shown returns rep as it may be kept and shown: the value of each of p's
// secret params replaced by [redacted], in the params and wherever a
// command printed it or a summary quotes it. rep is not changed; it is
// returned as is when p has no secret param.
//
// The copy goes through the report's JSON form, the form the store keeps
// and every page reads, so no field is missed when the report grows one.
// Expressions were evaluated on what the commands really printed.
func (p *Prepared) Shown(rep *runbooks.Report) *runbooks.Report {
	r := redact.Values(p.Secrets()...)
	if r == nil || rep == nil {
		return rep
	}
	out := new(runbooks.Report)
	if err := r.Copy(rep, out); err != nil {
		// A report that does not encode cannot be stored either; what is
		// shown of it then is only that, not its text.
		out = &runbooks.Report{RunID: rep.RunID, Runbook: rep.Runbook, Title: rep.Title, Trigger: rep.Trigger, StartedAt: rep.StartedAt,
			FinishedAt: rep.FinishedAt, VerdictAt: rep.VerdictAt, Outcome: rep.Outcome, Undiagnosed: rep.Undiagnosed}
	}
	out.Params = p.Runbook.MaskSecrets(rep.Params)
	return out
}

// shownEvent is ev as it may be shown: see Shown.
func (p *Prepared) shownEvent(r *redact.Redactor, ev Event) Event {
	if ev.Run != nil {
		tr := new(runbooks.TargetRun)
		if err := r.Copy(ev.Run, tr); err != nil {
			tr = &runbooks.TargetRun{Step: ev.Run.Step, Check: ev.Run.Check, Target: ev.Run.Target, Host: ev.Run.Host, Status: ev.Run.Status,
				StartedAt: ev.Run.StartedAt, Duration: ev.Run.Duration, DurationMS: ev.Run.DurationMS}
		}
		ev.Run = tr
	}
	if ev.Verdict != nil {
		var ds []runbooks.DiagnosisResult
		if err := r.Copy(ev.Verdict, &ds); err != nil {
			ds = nil
		}
		ev.Verdict = ds
	}
	return ev
}

// showing wraps a progress callback so that it is told each event as it
// may be shown (Shown); progress is returned as is when p has no secret.
func (p *Prepared) showing(progress func(Event)) func(Event) {
	r := redact.Values(p.Secrets()...)
	if r == nil || progress == nil {
		return progress
	}
	return func(ev Event) { progress(p.shownEvent(r, ev)) }
}
