// Package redact removes secrets from text that leaves runbot for people:
// Slack messages, the web report pages, a postmortem draft. Every place
// that shows a run to people uses the one Redactor, so that what Slack
// hides the web page hides too.
package redact

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/runbot/runbot/internal/secret"
)

// Redacted replaces a secret in shown text.
const Redacted = "[redacted]"

// defaults catch the secrets most likely to turn up in command output:
// Slack tokens, bearer tokens, AWS access keys, private keys, and the value
// of anything called password, secret, token or api_key. A pattern with
// capture groups redacts only the groups, so the name stays readable
// ("password=[redacted]").
var defaults = []string{
	`xox[abposr]-[0-9A-Za-z-]+`,
	`xapp-[0-9A-Za-z-]+`,
	`(?i)bearer\s+([A-Za-z0-9._~+/=-]{8,})`,
	`\bAKIA[0-9A-Z]{16}\b`,
	`-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)`,
	`(?i)(?:password|passwd|secret|token|api[_-]?key)["']?\s*[=:]\s*["']?([^\s"'&,;]+)`,
}

// Redactor removes secrets from text. A nil *Redactor removes nothing.
type Redactor struct {
	patterns []*regexp.Regexp
}

// New compiles the default patterns, the given ones, and a literal pattern
// for each of the given secret values (the bot's own tokens and keys).
func New(patterns []string, secrets ...secret.Value) (*Redactor, error) {
	r := &Redactor{}
	for _, p := range append(append([]string(nil), defaults...), patterns...) {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("redaction pattern %q: %w", p, err)
		}
		r.patterns = append(r.patterns, re)
	}
	for _, s := range secrets {
		if !s.IsZero() {
			r.patterns = append(r.patterns, regexp.MustCompile(regexp.QuoteMeta(s.Reveal())))
		}
	}
	return r, nil
}

// With returns a redactor that removes what r removes and also the given
// patterns and secret values; r is not changed. A nil r starts from the
// defaults.
func (r *Redactor) With(patterns []string, secrets ...secret.Value) (*Redactor, error) {
	if r == nil {
		return New(patterns, secrets...)
	}
	more, err := New(patterns, secrets...)
	if err != nil {
		return nil, err
	}
	// more starts with the defaults, which r has already.
	out := &Redactor{patterns: append(append([]*regexp.Regexp(nil), r.patterns...), more.patterns[len(defaults):]...)}
	return out, nil
}

// Redact returns s with every match replaced by [redacted].
func (r *Redactor) Redact(s string) string {
	if r == nil || s == "" {
		return s
	}
	for _, re := range r.patterns {
		s = redactAll(re, s)
	}
	return s
}

// Copy sets *out to a copy of in with every string in it redacted. It goes
// through the JSON form of in, the form the store keeps, so that no field
// is missed when a type grows one; map keys are left alone, as they are
// names from the runbook, not data.
func (r *Redactor) Copy(in, out any) error {
	raw, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("redact: %w", err)
	}
	if r != nil {
		var tree any
		if err := json.Unmarshal(raw, &tree); err != nil {
			return fmt.Errorf("redact: %w", err)
		}
		if raw, err = json.Marshal(r.tree(tree)); err != nil {
			return fmt.Errorf("redact: %w", err)
		}
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("redact: %w", err)
	}
	return nil
}

// tree redacts the strings of a decoded JSON value in place.
func (r *Redactor) tree(v any) any {
	switch x := v.(type) {
	case string:
		return r.Redact(x)
	case []any:
		for i := range x {
			x[i] = r.tree(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = r.tree(x[k])
		}
	}
	return v
}

func redactAll(re *regexp.Regexp, s string) string {
	matches := re.FindAllStringSubmatchIndex(s, -1)
	if matches == nil {
		return s
	}
	var b strings.Builder
	last := 0
	for _, m := range matches {
		spans := [][2]int{{m[0], m[1]}}
		if len(m) > 2 {
			spans = spans[:0]
			for g := 2; g+1 < len(m); g += 2 {
				if m[g] >= 0 {
					spans = append(spans, [2]int{m[g], m[g+1]})
				}
			}
			if len(spans) == 0 {
				spans = [][2]int{{m[0], m[1]}}
			}
		}
		for _, sp := range spans {
			if sp[0] < last {
				continue
			}
			b.WriteString(s[last:sp[0]])
			b.WriteString(Redacted)
			last = sp[1]
		}
	}
	b.WriteString(s[last:])
	return b.String()
}
