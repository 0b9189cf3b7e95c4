package runbooks

import (
	"github.com/runbot/runbot/internal/redact"
	"github.com/runbot/runbot/internal/secret"
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
	return MaskSecretParams(rb.SecretNames(), params)
}

// MaskSecretParams is MaskSecrets for the named secret params, for what
// keeps the names without the runbook (a plan).
func MaskSecretParams(names []string, params map[string]string) map[string]string {
	r := redact.Values(SecretParamValues(names, params)...)
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

// SecretParamValues returns the values params gives the named secret params.
func SecretParamValues(names []string, params map[string]string) []secret.Value {
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
	return SecretParamValues(rb.SecretNames(), params)
}
