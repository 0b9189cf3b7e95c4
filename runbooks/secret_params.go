package runbooks

import (
	"encoding/json"
	"slices"

	"github.com/runbot/runbot/internal/redact"
	"github.com/runbot/runbot/internal/secret"
	"github.com/runbot/runbot/store"
)

// minSecretLen is the shortest value a secret param takes. Its value is
// hidden wherever it occurs in what a run shows, and a shorter one (a
// digit, a word) would hide ordinary text everywhere, and give itself away
// by what it hid.
const minSecretLen = 8

// MaskSecrets returns params with the value of every secret param replaced
// by [redacted], and hidden in the other params' values too (a URL param
// that quotes the token): the params as a run keeps and shows them. params
// itself is not changed; it is returned as is when it holds no secret.
func (rb *Runbook) MaskSecrets(params map[string]string) map[string]string {
	return maskSecrets(rb.SecretNames(), params)
}

// maskSecrets is MaskSecrets for the named secret params.
func maskSecrets(names []string, params map[string]string) map[string]string {
	r := redact.Values(secretValues(names, params)...)
	if r == nil {
		return params
	}
	out := make(map[string]string, len(params))
	for k, v := range params {
		out[k] = r.Redact(v)
	}
	for _, name := range names {
		if _, ok := params[name]; ok {
			out[name] = redact.Redacted
		}
	}
	return out
}

// SecretNames lists rb's secret params.
func (rb *Runbook) SecretNames() []string {
	var out []string
	for _, p := range rb.Params {
		if p.Secret {
			out = append(out, p.Name)
		}
	}
	return out
}

// secretValues returns the values params gives the named secret params.
func secretValues(names []string, params map[string]string) []secret.Value {
	var out []secret.Value
	for _, name := range names {
		if v := params[name]; v != "" {
			out = append(out, secret.New(v))
		}
	}
	return out
}

// SecretValues returns the values params gives rb's secret params.
func (rb *Runbook) SecretValues(params map[string]string) []secret.Value {
	return secretValues(rb.SecretNames(), params)
}

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
func (p *Prepared) Shown(rep *Report) *Report {
	r := redact.Values(p.Secrets()...)
	if r == nil || rep == nil {
		return rep
	}
	out := new(Report)
	if err := r.Copy(rep, out); err != nil {
		// A report that does not encode cannot be stored either; what is
		// shown of it then is only that, not its text.
		out = &Report{RunID: rep.RunID, Runbook: rep.Runbook, Title: rep.Title, Trigger: rep.Trigger, StartedAt: rep.StartedAt,
			FinishedAt: rep.FinishedAt, VerdictAt: rep.VerdictAt, Outcome: rep.Outcome, Undiagnosed: rep.Undiagnosed}
	}
	out.Params = p.Runbook.MaskSecrets(rep.Params)
	return out
}

// shownEvent is ev as it may be shown: see Shown.
func (p *Prepared) shownEvent(r *redact.Redactor, ev Event) Event {
	if ev.Run != nil {
		tr := new(TargetRun)
		if err := r.Copy(ev.Run, tr); err != nil {
			tr = &TargetRun{Step: ev.Run.Step, Check: ev.Run.Check, Target: ev.Run.Target, Host: ev.Run.Host, Status: ev.Run.Status,
				StartedAt: ev.Run.StartedAt, Duration: ev.Run.Duration, DurationMS: ev.Run.DurationMS}
		}
		ev.Run = tr
	}
	if ev.Verdict != nil {
		var ds []DiagnosisResult
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

// Scrubber returns a function that replaces the value of each of the
// plan's secret params by [redacted] in a text made from the plan or from
// applying it (its commands, diffs, action output, apply messages).
func (b *PlanBody) Scrubber() func(string) string {
	return redact.Values(b.Secrets()...).Redact
}

// Shown returns the plan as it may be shown: its secret params masked and
// their values hidden wherever the plan quotes them.
func (b *PlanBody) Shown() *PlanBody {
	if len(b.Secret) == 0 {
		return b
	}
	out := new(PlanBody)
	if err := redact.Values(b.Secrets()...).Copy(b, out); err != nil {
		out = &PlanBody{Runbook: b.Runbook, Remediation: b.Remediation, Diagnosis: b.Diagnosis, Deployment: b.Deployment,
			Verify: slices.Clone(b.Verify), Rollback: b.Rollback, Escalate: b.Escalate, Secret: b.Secret}
	}
	// The params as the run shows them: the secret ones masked, their
	// values hidden in the others.
	out.Params = maskSecrets(b.Secret, b.Params)
	return out
}

// Secrets returns the values of the plan's secret params.
func (b *PlanBody) Secrets() []secret.Value { return secretValues(b.Secret, b.Params) }

// PlanSecrets returns the values of the secret params of stored plans,
// for what shows them with their actions and audit trail: a plan keeps
// those values, and what applying it recorded may quote them. A plan whose
// body does not decode has none to give.
func PlanSecrets(plans []store.Plan) []secret.Value {
	var out []secret.Value
	for _, p := range plans {
		var b PlanBody
		if json.Unmarshal(p.Body, &b) == nil {
			out = append(out, b.Secrets()...)
		}
	}
	return out
}
