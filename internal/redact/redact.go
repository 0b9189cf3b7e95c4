// Package redact removes secrets from text that leaves runbot for people:
// Slack messages, the web report pages, a postmortem draft. Every place
// that shows a run to people uses the one Redactor, so that what Slack
// hides the web page hides too.
package redact

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/runbot/runbot/internal/secret"
)

// Redacted replaces a secret in shown text.
const Redacted = "[redacted]"

// defaults catch the secrets most likely to turn up in command output:
// Slack tokens, bearer tokens, AWS access keys, private keys, and the value
// of anything called password, secret, token (but not a token count) or
// api_key. A pattern with
// capture groups redacts only the groups, so the name stays readable
// ("password=[redacted]").
var defaults = []string{
	`xox[abposr]-[0-9A-Za-z-]+`,
	`xapp-[0-9A-Za-z-]+`,
	`(?i)bearer\s+([A-Za-z0-9._~+/=-]{8,})`,
	`\bAKIA[0-9A-Z]{16}\b`,
	`-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)`,
	`(?i)(?:password|passwd|secret|api[_-]?key)["']?\s*[=:]\s*["']?([^\s"'&,;]+)`,
	// A token's value must hold something besides digits and dots: model
	// servers log token counts everywhere ("#token: 4030", SGLang's
	// "#new-token: 12"), and a count is evidence, never a credential.
	`(?i)token["']?\s*[=:]\s*["']?([^\s"'&,;]*[^\s"'&,;0-9.][^\s"'&,;]*)`,
}

// hints are, for each default pattern, words one of which (in ASCII
// lower case) every match contains: text without any is not searched with
// the pattern. Most text holds no secret, and a substring search is much
// cheaper than a regular expression (a run page redacts megabytes). When
// starts is set, every match also starts with one of the words, so only
// the places where one occurs are tried.
var hints = []hint{
	{words: []string{"xox"}, starts: true},
	{words: []string{"xapp-"}, starts: true},
	{words: []string{"bearer"}, starts: true},
	// \b before AKIA looks at the byte before the word: searched whole.
	{words: []string{"akia"}},
	{words: []string{"private key"}},
	{words: []string{"password", "passwd", "secret", "api"}, starts: true},
	{words: []string{"token"}, starts: true},
}

type hint struct {
	words  []string
	starts bool
}

// Redactor removes secrets from text. A nil *Redactor removes nothing.
// Secret values can be added to a redactor in use (Add), and a redactor
// made from it (With) hides them too: serve builds its redactor once and
// hands it out, and a reload that names a new secret adds it there.
type Redactor struct {
	// parent, when set, redacts first: r was made from it by With.
	parent *Redactor
	rules  atomic.Pointer[rules]
	// adding serializes Add.
	adding sync.Mutex
}

// rules are what one redactor adds to its parent's: patterns[i], with its
// anchored form and its hint. They are replaced whole, never changed.
type rules struct {
	patterns []*regexp.Regexp
	// anchored[i] is patterns[i] matching only at the start of the text,
	// for hints[i].starts.
	anchored []*regexp.Regexp
	// hints[i], when it has words, says where pattern i's matches can be
	// (see the package's hints); none means search everywhere.
	hints []hint
}

// New compiles the default patterns, the given ones, and a literal pattern
// for each of the given secret values (the bot's own tokens and keys).
func New(patterns []string, secrets ...secret.Value) (*Redactor, error) {
	rl, err := compile(append(append([]string(nil), defaults...), patterns...), hints)
	if err != nil {
		return nil, err
	}
	r := &Redactor{}
	r.rules.Store(rl.withValues(secrets))
	return r, nil
}

// compile compiles patterns, the first of which have the given hints.
func compile(patterns []string, hs []hint) (*rules, error) {
	rl := &rules{}
	for i, p := range patterns {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("redaction pattern %q: %w", p, err)
		}
		var h hint
		var anchored *regexp.Regexp
		if i < len(hs) {
			h = hs[i]
			if h.starts {
				anchored = regexp.MustCompile(`^(?:` + p + `)`)
			}
		}
		rl.patterns, rl.anchored, rl.hints = append(rl.patterns, re), append(rl.anchored, anchored), append(rl.hints, h)
	}
	return rl, nil
}

// withValues returns rl and a literal pattern for each non-empty secret
// value it does not have yet; rl is not changed. A value given again adds
// nothing, so that a reload, which adds what it names every time, does
// not make every later redaction slower.
func (rl *rules) withValues(secrets []secret.Value) *rules {
	out := &rules{patterns: slices.Clone(rl.patterns), anchored: slices.Clone(rl.anchored), hints: slices.Clone(rl.hints)}
	for _, s := range secrets {
		if s.IsZero() {
			continue
		}
		lit := regexp.QuoteMeta(s.Reveal())
		if slices.ContainsFunc(out.patterns, func(re *regexp.Regexp) bool { return re.String() == lit }) {
			continue
		}
		out.patterns = append(out.patterns, regexp.MustCompile(lit))
		out.anchored, out.hints = append(out.anchored, nil), append(out.hints, hint{})
	}
	return out
}

// Values returns a redactor that removes only the given secret values, none
// of the default patterns: for text that is kept as it is apart from them
// (a report with a run's secret params hidden). It returns nil, which
// removes nothing, when every value is empty.
func Values(secrets ...secret.Value) *Redactor {
	rl := (&rules{}).withValues(secrets)
	if len(rl.patterns) == 0 {
		return nil
	}
	r := &Redactor{}
	r.rules.Store(rl)
	return r
}

// With returns a redactor that removes what r removes — also what is
// added to r later — and the given patterns and secret values; r is not
// changed. A nil r starts from the defaults.
func (r *Redactor) With(patterns []string, secrets ...secret.Value) (*Redactor, error) {
	if r == nil {
		return New(patterns, secrets...)
	}
	rl, err := compile(patterns, nil)
	if err != nil {
		return nil, err
	}
	out := &Redactor{parent: r}
	out.rules.Store(rl.withValues(secrets))
	return out, nil
}

// Add has r, and every redactor made from it, also remove the given secret
// values from now on: a secret that a reload names. Adding to a nil
// Redactor, which removes nothing, does nothing.
func (r *Redactor) Add(secrets ...secret.Value) {
	if r == nil {
		return
	}
	r.adding.Lock()
	defer r.adding.Unlock()
	r.rules.Store(r.rules.Load().withValues(secrets))
}

// Redact returns s with every match replaced by [redacted].
func (r *Redactor) Redact(s string) string {
	if r == nil || s == "" {
		return s
	}
	if r.parent != nil {
		s = r.parent.Redact(s)
	}
	rl := r.rules.Load()
	// The hints hold for ASCII text only: (?i) folds some other letters
	// to ASCII ones (the Kelvin sign to k), so other text is searched
	// whole.
	ascii := isASCII(s)
	lower := ""
	for i, re := range rl.patterns {
		h := rl.hints[i]
		if !ascii || len(h.words) == 0 {
			s = redactAll(re, s)
			continue
		}
		if lower == "" {
			lower = asciiLower(s)
		}
		at := h.find(lower)
		if len(at) == 0 {
			continue
		}
		var out string
		if h.starts {
			out = redactAt(rl.anchored[i], s, at)
		} else {
			out = redactAll(re, s)
		}
		if out != s {
			// The text changed; so does its lower case.
			s, lower = out, ""
		}
	}
	return s
}

// find returns where in lower the hint's words occur, in order; for a
// hint whose matches need not start at a word, one position says that
// some word occurs.
func (h hint) find(lower string) []int {
	var at []int
	for _, w := range h.words {
		for off := 0; ; {
			i := strings.Index(lower[off:], w)
			if i < 0 {
				break
			}
			at = append(at, off+i)
			if !h.starts {
				return at
			}
			off += i + 1
		}
	}
	slices.Sort(at)
	return slices.Compact(at)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// asciiLower lower-cases ASCII letters only, so positions stay as in s.
func asciiLower(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return 'A' <= r && r <= 'Z' }) {
		return s
	}
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// Copy sets *out to a copy of in with every string in it redacted. It goes
// through the JSON form of in, the form the store keeps, so that no field
// is missed when a type grows one; object keys are left alone, as they are
// names from the runbook, not data.
func (r *Redactor) Copy(in, out any) error {
	raw, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("redact: %w", err)
	}
	if r != nil {
		if raw, err = r.JSON(raw); err != nil {
			return fmt.Errorf("redact: %w", err)
		}
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("redact: %w", err)
	}
	return nil
}

// JSON redacts every string value of a JSON document (a report as the
// store keeps it), leaving its object keys and everything else as they
// are; a nil r redacts nothing. It works on the encoded
// text: a string is a string value unless a colon follows it. The same
// text is often in a document many times (a log line in a finding's
// evidence, its step's evidence and its events): each distinct string is
// redacted once.
func (r *Redactor) JSON(raw []byte) ([]byte, error) {
	if r == nil {
		return raw, nil
	}
	seen := map[string]string{}
	var out []byte
	copied := 0
	for i := 0; i < len(raw); i++ {
		if raw[i] != '"' {
			continue
		}
		j, escaped := i+1, false
		for ; j < len(raw) && raw[j] != '"'; j++ {
			if raw[j] == '\\' {
				escaped = true
				j++
			}
		}
		if j >= len(raw) {
			return nil, fmt.Errorf("unterminated string at offset %d", i)
		}
		k := j + 1
		for k < len(raw) && (raw[k] == ' ' || raw[k] == '\t' || raw[k] == '\n' || raw[k] == '\r') {
			k++
		}
		if k < len(raw) && raw[k] == ':' {
			i = j
			continue
		}
		var text string
		if escaped {
			if err := json.Unmarshal(raw[i:j+1], &text); err != nil {
				return nil, err
			}
		} else {
			text = string(raw[i+1 : j])
		}
		red, ok := seen[text]
		if !ok {
			red = r.Redact(text)
			seen[text] = red
		}
		if red != text {
			if out == nil {
				// Room for the document and some growth, so that a
				// document with many redactions is not copied over and
				// over as it grows.
				out = make([]byte, 0, len(raw)+len(raw)/8)
			}
			out = appendJSONString(append(out, raw[copied:i]...), red)
			copied = j + 1
		}
		i = j
	}
	if out == nil {
		return raw, nil
	}
	return append(out, raw[copied:]...), nil
}

// appendJSONString appends s as a JSON string. s is valid UTF-8 (it was
// decoded from JSON, and redaction only cuts it at ASCII), so only quotes,
// backslashes and control characters need escaping.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	last := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[last:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		last = i + 1
	}
	return append(append(b, s[last:]...), '"')
}

func redactAll(re *regexp.Regexp, s string) string {
	return replaceSpans(s, re.FindAllStringSubmatchIndex(s, -1))
}

// redactAt is redactAll for a pattern whose matches start only at the
// given positions (ascending): anchored is the pattern anchored at the
// start of the text, tried at each position past the last match, which
// gives the matches an unanchored search finds, leftmost first.
func redactAt(anchored *regexp.Regexp, s string, starts []int) string {
	var matches [][]int
	last := 0
	for _, p := range starts {
		if p < last {
			continue
		}
		m := anchored.FindStringSubmatchIndex(s[p:])
		if m == nil {
			continue
		}
		for j := range m {
			if m[j] >= 0 {
				m[j] += p
			}
		}
		matches = append(matches, m)
		last = max(m[1], p+1)
	}
	return replaceSpans(s, matches)
}

// replaceSpans replaces each match, or its capture groups when it has
// any that matched, by [redacted].
func replaceSpans(s string, matches [][]int) string {
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
