package checks

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// selectorRe reads a requested name with label matchers,
// name{label="value",...}.
var (
	selectorRe = regexp.MustCompile(`^([^{]+)\{(.*)\}$`)
	matcherRe  = regexp.MustCompile(`\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*("(?:[^"\\]|\\.)*")\s*,?`)
)

// selectSeries gives each requested name that carries label matchers a
// metric of its own in every scrape, holding only the series whose labels
// include every matcher. A counter such as
// sglang:realtime_tokens_total{mode="decode"} counts prefill and decode
// tokens in one family, and only one of them is the evidence.
func selectSeries(names []string, scrapes []scrape) {
	for _, n := range names {
		base, pairs, ok := parseSelector(n)
		if !ok {
			continue
		}
		for _, sc := range scrapes {
			m, found := sc.Metrics[base]
			if !found {
				continue
			}
			sel := promMetric{Type: m.Type}
			for _, s := range m.Series {
				if hasLabels(s.Labels, pairs) {
					sel.Series = append(sel.Series, s)
				}
			}
			if len(sel.Series) > 0 {
				sc.Metrics[n] = sel
			}
		}
	}
}

// parseSelector splits name{a="x",b="y"} into the name and its matchers,
// each rendered as labelString renders a label.
func parseSelector(s string) (string, []string, bool) {
	m := selectorRe.FindStringSubmatch(s)
	if m == nil {
		return "", nil, false
	}
	var pairs []string
	rest := m[2]
	for strings.TrimSpace(rest) != "" {
		loc := matcherRe.FindStringSubmatchIndex(rest)
		if loc == nil || loc[0] != 0 {
			return "", nil, false
		}
		v, err := strconv.Unquote(rest[loc[4]:loc[5]])
		if err != nil {
			return "", nil, false
		}
		pairs = append(pairs, fmt.Sprintf("%s=%q", rest[loc[2]:loc[3]], v))
		rest = rest[loc[1]:]
	}
	return strings.TrimSpace(m[1]), pairs, true
}

// hasLabels reports whether a series' canonical label string holds every
// pair.
func hasLabels(labels string, pairs []string) bool {
	parts := splitLabels(labels)
	for _, p := range pairs {
		found := false
		for _, q := range parts {
			if q == p {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// splitLabels splits a canonical label string at the commas between
// pairs, not those inside quoted values.
func splitLabels(labels string) []string {
	var parts []string
	start, quoted := 0, false
	for i := 0; i < len(labels); i++ {
		switch labels[i] {
		case '\\':
			i++
		case '"':
			quoted = !quoted
		case ',':
			if !quoted {
				parts = append(parts, labels[start:i])
				start = i + 1
			}
		}
	}
	if start < len(labels) {
		parts = append(parts, labels[start:])
	}
	return parts
}
