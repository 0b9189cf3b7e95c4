package runbooks

import (
	"regexp/syntax"
	"slices"

	"go.yaml.in/yaml/v3"
)

// recordExtract keeps where each extract pattern of a command step is
// written, so a warning about a pattern points at it.
func (l *loader) recordExtract(s *Step, with *yaml.Node) {
	if s.Check != "command" || with == nil || with.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(with.Content); i += 2 {
		if with.Content[i].Value != "extract" || with.Content[i+1].Kind != yaml.MappingNode {
			continue
		}
		ex := with.Content[i+1]
		for j := 0; j+1 < len(ex.Content); j += 2 {
			if ex.Content[j+1].Kind != yaml.ScalarNode {
				continue
			}
			if l.extractNodes == nil {
				l.extractNodes = map[string]map[string]*yaml.Node{}
			}
			if l.extractNodes[s.ID] == nil {
				l.extractNodes[s.ID] = map[string]*yaml.Node{}
			}
			l.extractNodes[s.ID][ex.Content[j].Value] = ex.Content[j+1]
		}
	}
}

// checkEmptyCaptures warns about an extract pattern whose value can be
// the empty string (its capture group matches "", as `(\d*)` does) when a
// condition converts that value with int(), float() or duration(): the
// pattern matches, so the value is present and get(...) ?? "0" does not
// replace it, and the conversion fails at run time, leaving the finding
// inconclusive on exactly the output the pattern was written for.
func (l *loader) checkEmptyCaptures() {
	warned := map[*yaml.Node]bool{}
	for _, p := range l.converted {
		step, key, ok := valuesPath(l.rb, p)
		if !ok {
			continue
		}
		n := l.extractNodes[step][key]
		if n == nil || warned[n] || !captureCanBeEmpty(n.Value) {
			continue
		}
		warned[n] = true
		l.d.Warnf(n, "extract %s: the pattern can capture the empty string, and a condition converts steps.%s.values[%q] to a number, which fails at run time on \"\"; make the group match at least one character (e.g. \\d+ for \\d*): a pattern that does not match leaves the value absent, which get(...) ?? DEFAULT replaces", key, step, key)
	}
}

// valuesPath returns the step and key of a path steps.ID.values.KEY or
// steps.ID.ROLE.values.KEY.
func valuesPath(rb *Runbook, p []string) (string, string, bool) {
	if len(p) < 4 || p[0] != "steps" {
		return "", "", false
	}
	s := rb.StepByID(p[1])
	if s == nil {
		return "", "", false
	}
	i := 2
	if len(s.Targets) > 1 && slices.Contains(s.Targets, p[2]) {
		i = 3
	}
	if len(p) != i+2 || p[i] != "values" {
		return "", "", false
	}
	return s.ID, p[i+1], true
}

// captureCanBeEmpty reports whether the value an extract pattern yields
// (its first capture group, or the whole match without one) can be "".
// A pattern that does not compile is reported elsewhere.
func captureCanBeEmpty(pattern string) bool {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return false
	}
	if c := firstCapture(re); c != nil {
		return matchesEmpty(c)
	}
	return matchesEmpty(re)
}

func firstCapture(re *syntax.Regexp) *syntax.Regexp {
	if re.Op == syntax.OpCapture && re.Cap == 1 {
		return re
	}
	for _, s := range re.Sub {
		if c := firstCapture(s); c != nil {
			return c
		}
	}
	return nil
}

// matchesEmpty reports whether re can match the empty string.
func matchesEmpty(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary, syntax.OpStar, syntax.OpQuest:
		return true
	case syntax.OpLiteral:
		return len(re.Rune) == 0
	case syntax.OpPlus, syntax.OpCapture:
		return matchesEmpty(re.Sub[0])
	case syntax.OpRepeat:
		return re.Min == 0 || matchesEmpty(re.Sub[0])
	case syntax.OpConcat:
		for _, s := range re.Sub {
			if !matchesEmpty(s) {
				return false
			}
		}
		return true
	case syntax.OpAlternate:
		for _, s := range re.Sub {
			if matchesEmpty(s) {
				return true
			}
		}
		return false
	}
	return false
}
