package console

import (
	"io"

	"github.com/runbot/runbot/runbooks/replay"
)

// TestFailure shows what a runbook test expected and what the replay
// gave, and the evidence behind what it gave, indented like go test's log
// lines.
func TestFailure(w io.Writer, res replay.TestResult) {
	out := NewOutput(w)
	if res.Error != "" {
		out.Printf("    %s:%d:%d: %s\n", res.File, res.Line, res.Col, res.Error)
		return
	}
	for _, f := range res.Failures {
		out.Printf("    %s:%d:%d: %s\n        expected: %s\n        got:      %s\n", res.File, f.Line, f.Col, f.What, f.Expected, f.Got)
	}
	rep := res.Report
	if rep == nil {
		return
	}
	out.Printf("    evidence (outcome %s):\n", rep.Outcome)
	for _, d := range rep.Diagnoses {
		out.Printf("        diagnosis %s: %s\n", d.ID, d.Summary)
	}
	for _, f := range rep.Findings {
		out.Printf("        finding %s (%s): %s\n", f.ID, f.Severity, f.Summary)
		for _, e := range f.Evidence {
			out.Printf("            %s\n", e)
		}
	}
	for _, f := range rep.Inconclusive {
		out.Printf("        inconclusive %s: %s\n", f.ID, f.Reason)
	}
	for _, s := range rep.Steps {
		if s.Error != "" {
			out.Printf("        step %s on %s %s: %s\n", s.Step, s.Target, s.Status, s.Error)
		}
	}
}
