package console

import (
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/engine"
	"github.com/runbot/runbot/runbooks/failures"
)

// Progress shows one engine event on the terminal's current line: the
// step running, or the verdict as soon as it is known.
func Progress(w io.Writer, ev engine.Event, started time.Time) {
	if ev.Kind == engine.EventVerdict {
		ids := make([]string, len(ev.Verdict))
		for i, d := range ev.Verdict {
			ids[i] = d.ID
		}
		what := "no diagnosis holds"
		if len(ids) > 0 {
			what = strings.Join(ids, ", ")
		}
		Note(w, "\r\033[Kverdict after %s: %s; collecting the rest of the evidence\n", ev.At.Sub(started).Round(100*time.Millisecond), what)
		return
	}
	verb := "running"
	if ev.Kind == engine.EventStepFinished {
		verb = string(ev.Run.Status)
	}
	// Progress is a courtesy on a terminal: a failed write must not stop the run.
	Note(w, "\r\033[K%s %s on %s", verb, ev.Run.Step, ev.Run.Target)
}

// ProgressFunc is Progress as a run's progress hook
// (engine.RunOptions.Progress): the events of steps running at once are
// shown one at a time.
func ProgressFunc(w io.Writer, started time.Time) func(engine.Event) {
	var mu sync.Mutex
	return func(ev engine.Event) {
		mu.Lock()
		defer mu.Unlock()
		Progress(w, ev, started)
	}
}

// ClearLine clears the line Progress wrote on.
func ClearLine(w io.Writer) { Note(w, "\r\033[K") }

// Report renders a report for a person at a terminal: what was wrong
// first, then the evidence, then what each step did. It returns the first
// write error.
func Report(w io.Writer, rep *runbooks.Report, color bool) error {
	o := NewOutput(w)
	c := colors(color)
	o.Printf("%s%s%s  %s  run %s  %s (verdict after %s)\n", c.bold, rep.Runbook, c.reset, ParamLine(rep.Params), rep.RunID,
		rep.FinishedAt.Sub(rep.StartedAt).Round(10*time.Millisecond), rep.VerdictAt.Sub(rep.StartedAt).Round(10*time.Millisecond))
	for _, x := range rep.Contradictions {
		o.Printf("%sCONTRADICTION%s in this report: %s\n", c.red, c.reset, x)
	}
	if rep.Title != "" {
		o.Printf("%s%s%s\n", c.dim, rep.Title, c.reset)
	}
	o.Println()
	reportUnreachable(o, c, rep)
	reportDiagnoses(o, c, rep)
	reportFindings(o, c, rep)
	if err := reportSteps(o, c, rep); err != nil {
		return err
	}
	o.Println()
	switch rep.Outcome {
	case runbooks.OutcomeCritical:
		o.Printf("%sOutcome: critical%s\n", c.red, c.reset)
	case runbooks.OutcomeInconclusive:
		// Say what kept the run from a verdict: a step that could not
		// observe is the target's doing, an expression that failed on
		// what every step saw is the runbook's.
		why := "no diagnosis holds: the runbook does not cover what it saw"
		switch notRun, failed := rep.StepsNotRun(), rep.ExpressionFailed(); {
		case notRun && failed:
			why = "some steps could not run, and an expression could not be evaluated"
		case notRun:
			why = "some steps could not run"
		case failed:
			why = "an expression could not be evaluated on what the steps saw"
		}
		o.Printf("%sOutcome: inconclusive — %s%s\n", c.yellow, why, c.reset)
	default:
		o.Printf("%sOutcome: ok%s\n", c.green, c.reset)
	}
	return o.err
}

func reportDiagnoses(o *Output, c palette, rep *runbooks.Report) {
	if len(rep.Diagnoses) == 0 {
		return
	}
	o.Printf("%sDiagnosis%s\n", c.bold, c.reset)
	for _, d := range rep.Diagnoses {
		o.Printf("  %s %s%s%s: %s\n", sevTag(c, d.Severity), c.bold, d.ID, c.reset, d.Summary)
		if d.Remediation != "" {
			o.Printf("      proposed remediation: %s\n", d.Remediation)
		}
	}
	o.Println()
}

func reportFindings(o *Output, c palette, rep *runbooks.Report) {
	if len(rep.Findings) > 0 {
		o.Printf("%sFindings%s  %sages count to the run's end, %s%s\n", c.bold, c.reset, c.dim, rep.FinishedAt.UTC().Format("15:04:05 UTC"), c.reset)
		for _, f := range rep.Findings {
			o.Printf("  %s %s: %s\n", sevTag(c, f.Severity), f.ID, f.Summary)
			for _, e := range f.Evidence {
				o.Printf("      %s%s%s\n", c.dim, e, c.reset)
			}
		}
		o.Println()
	}
	if len(rep.Inconclusive) > 0 {
		o.Printf("%sCould not evaluate%s\n", c.bold, c.reset)
		for _, f := range rep.Inconclusive {
			o.Printf("  %s?%s %s: %s\n", c.yellow, c.reset, f.ID, f.Reason)
		}
		o.Println()
	}
}

// reportUnreachable says first which hosts could not be reached, one line
// each, as a host that is down fails every step there with the same error
// and the table below would otherwise open with that error many times.
func reportUnreachable(o *Output, c palette, rep *runbooks.Report) {
	hosts := failures.Unreachable(rep.Steps)
	for _, h := range hosts {
		o.Printf("%s%s%s\n", c.red, h, c.reset)
	}
	if len(hosts) > 0 {
		o.Println()
	}
}

// reportSteps is the table of steps, one line each with its first
// evidence or its error; the step runs that failed the same way on one
// host are left out of it and follow as one line per host and error.
func reportSteps(o *Output, c palette, rep *runbooks.Report) error {
	o.Printf("%sSteps%s\n", c.bold, c.reset)
	tw := tabwriter.NewWriter(o, 2, 4, 2, ' ', 0)
	to := NewOutput(tw)
	var folds []failures.Group
	folded := map[*runbooks.TargetRun]bool{}
	for _, g := range failures.Groups(rep.Steps) {
		if g.Folded() {
			folds = append(folds, g)
			for _, tr := range g.Runs {
				folded[tr] = true
			}
		}
	}
	for _, s := range rep.Steps {
		if folded[s] {
			continue
		}
		first := ""
		if len(s.Evidence) > 0 {
			first = s.Evidence[0]
		}
		if s.Error != "" {
			first = s.Error
		}
		to.Printf("  %s\t%s\t%s\t%s\t%s\n", statusMark(c, s.Status), s.Step, s.Target, fmtDur(s.Duration), oneLineOf(first, 110))
	}
	for _, g := range folds {
		// Only the status column is a cell, so the folded lines share its
		// alignment and leave the other columns' widths alone.
		to.Printf("  %s\t%s\n", statusMark(c, g.Runs[0].Status), oneLineOf(g.Line(), 200))
	}
	if to.err != nil {
		return to.err
	}
	return tw.Flush()
}

func fmtDur(d time.Duration) string {
	if d >= time.Second {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Millisecond).String()
}

func oneLineOf(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// ParamLine is a run's params as key=value pairs in name order, the empty
// ones left out.
func ParamLine(p map[string]string) string {
	keys := slices.Sorted(maps.Keys(p))
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		if p[k] != "" {
			parts = append(parts, k+"="+p[k])
		}
	}
	return strings.Join(parts, " ")
}
