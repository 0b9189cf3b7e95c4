package runbooks

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Claim is one fact a finding or diagnosis asserts about the world when it
// holds, such as "prefill.batching" or, negated, "!decode.batching". Claims
// make a report checkable for consistency: two results that hold together
// must never assert a fact and its negation (see Contradictions).
type Claim struct {
	Fact    string // subject.property, e.g. "prefill.batching"
	Negated bool
}

func (c Claim) String() string {
	if c.Negated {
		return "!" + c.Fact
	}
	return c.Fact
}

var claimRE = regexp.MustCompile(`^!?[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*$`)

// claims decodes a list of claims; a malformed one is a load problem at its
// position.
func (l *loader) claims(n *yaml.Node) []Claim {
	var out []Claim
	l.d.Items(n, "claims", func(_ int, v *yaml.Node) {
		s := l.d.String(v, "claim")
		if !claimRE.MatchString(s) {
			l.d.Errorf(v, "claim %q: write subject.fact (lowercase, e.g. decode.batching), negated with a leading '!'", s)
			return
		}
		out = append(out, Claim{Fact: strings.TrimPrefix(s, "!"), Negated: strings.HasPrefix(s, "!")})
	})
	return out
}

// Contradiction is a fact that one result of a report asserts and another
// denies.
type Contradiction struct {
	Fact     string `json:"fact"`
	Asserted string `json:"asserted_by"`
	Denied   string `json:"denied_by"`
}

func (c Contradiction) String() string {
	return fmt.Sprintf("%s asserts %s, %s denies it", c.Asserted, c.Fact, c.Denied)
}

// Contradictions lists the facts that the findings and diagnoses holding in
// rep assert and deny at once. A report with any is wrong somewhere: the
// runbook's conditions do not exclude each other where the world does.
func (rb *Runbook) Contradictions(rep *Report) []Contradiction {
	type source struct {
		name   string
		claims []Claim
	}
	var held []source
	for _, f := range rep.Findings {
		if rf := rb.finding(f.ID); rf != nil {
			held = append(held, source{"finding " + f.ID, rf.Claims})
		}
	}
	for _, d := range rep.Diagnoses {
		if rd := rb.diagnosis(d.ID); rd != nil {
			held = append(held, source{"diagnosis " + d.ID, rd.Claims})
		}
	}
	asserted := map[string][]string{}
	denied := map[string][]string{}
	for _, s := range held {
		for _, c := range s.claims {
			if c.Negated {
				denied[c.Fact] = append(denied[c.Fact], s.name)
			} else {
				asserted[c.Fact] = append(asserted[c.Fact], s.name)
			}
		}
	}
	var out []Contradiction
	for fact, by := range asserted {
		for _, a := range by {
			for _, d := range denied[fact] {
				out = append(out, Contradiction{Fact: fact, Asserted: a, Denied: d})
			}
		}
	}
	slices.SortFunc(out, func(a, b Contradiction) int { return strings.Compare(a.String(), b.String()) })
	return out
}

func (rb *Runbook) finding(id string) *Finding {
	for _, f := range rb.Findings {
		if f.ID == id {
			return f
		}
	}
	return nil
}

func (rb *Runbook) diagnosis(id string) *Diagnosis {
	for _, d := range rb.Diagnoses {
		if d.ID == id {
			return d
		}
	}
	return nil
}

// ClaimPattern is the regular expression a claim must match.
func ClaimPattern() string { return claimRE.String() }
