package remediation

import (
	"encoding/json"
	"slices"

	"github.com/runbot/runbot/internal/redact"
	"github.com/runbot/runbot/internal/secret"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/store"
)

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
	out.Params = runbooks.MaskSecretParams(b.Secret, b.Params)
	return out
}

// Secrets returns the values of the plan's secret params.
func (b *PlanBody) Secrets() []secret.Value { return runbooks.SecretParamValues(b.Secret, b.Params) }

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
