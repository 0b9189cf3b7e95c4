package slackchat

import (
	"fmt"
	"regexp"
	"strings"
)

// redacted replaces a secret in text posted to Slack.
const redacted = "[redacted]"

// defaultRedactions catch the secrets most likely to turn up in command
// output: Slack tokens, bearer tokens, AWS access keys, private keys, and
// the value of anything called password, secret, token or api_key. A
// pattern with capture groups redacts only the groups, so the name stays
// readable ("password=[redacted]").
var defaultRedactions = []string{
	`xox[abposr]-[0-9A-Za-z-]+`,
	`xapp-[0-9A-Za-z-]+`,
	`(?i)bearer\s+([A-Za-z0-9._~+/=-]{8,})`,
	`\bAKIA[0-9A-Z]{16}\b`,
	`-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)`,
	`(?i)(?:password|passwd|secret|token|api[_-]?key)["']?\s*[=:]\s*["']?([^\s"'&,;]+)`,
}

// Redactor removes secrets from text before it is posted to Slack.
type Redactor struct {
	patterns []*regexp.Regexp
}

// NewRedactor compiles the default patterns, the given ones, and a literal
// pattern for each of the given secret values (the bot's own tokens).
func NewRedactor(patterns []string, secrets ...Secret) (*Redactor, error) {
	r := &Redactor{}
	for _, p := range append(append([]string(nil), defaultRedactions...), patterns...) {
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
			b.WriteString(redacted)
			last = sp[1]
		}
	}
	b.WriteString(s[last:])
	return b.String()
}
