package console

import (
	"fmt"
	"io"
	"time"

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

// TestFinished writes a runbook test case's go-test-style result line,
// and for a failure what was expected and the evidence behind what it
// gave.
func TestFinished(w io.Writer, name string, res replay.TestResult) {
	if res.Passed {
		Note(w, "--- PASS: %s (%.3fs)\n", name, res.Duration.Seconds())
		return
	}
	Note(w, "--- FAIL: %s (%.3fs)\n", name, res.Duration.Seconds())
	TestFailure(w, res)
}

// TestSummary ends runbot test's text output as go test does, after the
// problems and warnings.
func TestSummary(w io.Writer, s *replay.Suite, elapsed time.Duration) {
	out := NewOutput(w)
	for _, p := range s.Problems {
		out.Println(p)
	}
	for _, warning := range s.Warnings {
		out.Println("warning: " + warning)
	}
	verdict := "ok"
	if !s.Passed {
		verdict = "FAIL"
		out.Println("FAIL")
	}
	// The problems count in the last line too: a test file that does not
	// load runs no test, and "0 test(s), 0 failed" alone would read as
	// nothing to do rather than as the reason for the FAIL.
	problems := ""
	if n := len(s.Problems); n > 0 {
		problems = fmt.Sprintf(", %d problem(s) (see above)", n)
	}
	out.Printf("%s\t%d test(s), %d failed%s\t%.3fs\n", verdict, len(s.Results), s.Failed, problems, elapsed.Seconds())
}
