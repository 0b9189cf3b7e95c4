package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/runbot/runbot/internal/step"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/engine"
)

// palette holds ANSI colours, empty when output is not a terminal.
type palette struct{ red, yellow, green, dim, bold, reset string }

func colors(on bool) palette {
	if !on {
		return palette{}
	}
	return palette{"\033[31m", "\033[33m", "\033[32m", "\033[2m", "\033[1m", "\033[0m"}
}

func printProgress(w io.Writer, ev engine.Event, started time.Time) {
	if ev.Kind == engine.EventVerdict {
		ids := make([]string, len(ev.Verdict))
		for i, d := range ev.Verdict {
			ids[i] = d.ID
		}
		what := "no diagnosis holds"
		if len(ids) > 0 {
			what = strings.Join(ids, ", ")
		}
		note(w, "\r\033[Kverdict after %s: %s; collecting the rest of the evidence\n", ev.At.Sub(started).Round(100*time.Millisecond), what)
		return
	}
	verb := "running"
	if ev.Kind == engine.EventStepFinished {
		verb = string(ev.Run.Status)
	}
	// Progress is a courtesy on a terminal: a failed write must not stop the run.
	note(w, "\r\033[K%s %s on %s", verb, ev.Run.Step, ev.Run.Target)
}

// printReport renders a report for a person at a terminal: what was wrong
// first, then the evidence, then what each step did. It returns the first
// write error.
func printReport(w io.Writer, rep *runbooks.Report, color bool) error {
	o := newOutput(w)
	c := colors(color)
	o.printf("%s%s%s  %s  run %s  %s (verdict after %s)\n", c.bold, rep.Runbook, c.reset, paramLine(rep.Params), rep.RunID,
		rep.FinishedAt.Sub(rep.StartedAt).Round(10*time.Millisecond), rep.VerdictAt.Sub(rep.StartedAt).Round(10*time.Millisecond))
	for _, x := range rep.Contradictions {
		o.printf("%sCONTRADICTION%s in this report: %s\n", c.red, c.reset, x)
	}
	if rep.Title != "" {
		o.printf("%s%s%s\n", c.dim, rep.Title, c.reset)
	}
	o.println()
	if len(rep.Diagnoses) > 0 {
		o.printf("%sDiagnosis%s\n", c.bold, c.reset)
		for _, d := range rep.Diagnoses {
			o.printf("  %s %s%s%s: %s\n", sevTag(c, d.Severity), c.bold, d.ID, c.reset, d.Summary)
			if d.Remediation != "" {
				o.printf("      proposed remediation: %s\n", d.Remediation)
			}
		}
		o.println()
	}
	if len(rep.Findings) > 0 {
		o.printf("%sFindings%s\n", c.bold, c.reset)
		for _, f := range rep.Findings {
			o.printf("  %s %s: %s\n", sevTag(c, f.Severity), f.ID, f.Summary)
			for _, e := range f.Evidence {
				o.printf("      %s%s%s\n", c.dim, e, c.reset)
			}
		}
		o.println()
	}
	if len(rep.Inconclusive) > 0 {
		o.printf("%sCould not evaluate%s\n", c.bold, c.reset)
		for _, f := range rep.Inconclusive {
			o.printf("  %s?%s %s: %s\n", c.yellow, c.reset, f.ID, f.Reason)
		}
		o.println()
	}
	o.printf("%sSteps%s\n", c.bold, c.reset)
	tw := tabwriter.NewWriter(o, 2, 4, 2, ' ', 0)
	to := newOutput(tw)
	for _, s := range rep.Steps {
		first := ""
		if len(s.Evidence) > 0 {
			first = s.Evidence[0]
		}
		if s.Error != "" {
			first = s.Error
		}
		to.printf("  %s\t%s\t%s\t%s\t%s\n", statusMark(c, s.Status), s.Step, s.Target, fmtDur(s.Duration), oneLineOf(first, 110))
	}
	if to.err != nil {
		return to.err
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	o.println()
	switch rep.Outcome {
	case runbooks.OutcomeCritical:
		o.printf("%sOutcome: critical%s\n", c.red, c.reset)
	case runbooks.OutcomeInconclusive:
		why := "some steps could not run"
		if !rep.Unobserved() {
			why = "no diagnosis holds: the runbook does not cover what it saw"
		}
		o.printf("%sOutcome: inconclusive — %s%s\n", c.yellow, why, c.reset)
	default:
		o.printf("%sOutcome: ok%s\n", c.green, c.reset)
	}
	return o.err
}

func sevTag(c palette, s runbooks.Severity) string {
	switch s {
	case runbooks.Critical:
		return c.red + "CRITICAL" + c.reset
	case runbooks.Warning:
		return c.yellow + "WARNING " + c.reset
	}
	return c.green + "INFO    " + c.reset
}

func statusMark(c palette, s step.Status) string {
	switch s {
	case step.OK:
		return c.green + "ok" + c.reset
	case step.Skipped:
		return c.dim + "skipped" + c.reset
	}
	return c.red + string(s) + c.reset
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

func paramLine(p map[string]string) string {
	keys := sortedKeys(p)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		if p[k] != "" {
			parts = append(parts, k+"="+p[k])
		}
	}
	return strings.Join(parts, " ")
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// output writes a command's text output and keeps the first write error, so
// that lost output (a closed pipe, a full disk) is reported once, when the
// command ends, instead of being checked on every line. After an error it
// writes nothing more.
type output struct {
	w   io.Writer
	err error
}

// newOutput wraps w; an *output is returned as it is, so that nested
// printers share one error.
func newOutput(w io.Writer) *output {
	if o, ok := w.(*output); ok {
		return o
	}
	return &output{w: w}
}

func (o *output) Write(p []byte) (int, error) {
	if o.err != nil {
		return 0, o.err
	}
	n, err := o.w.Write(p)
	o.err = err
	return n, err
}

func (o *output) printf(format string, a ...any) {
	if o.err == nil {
		_, o.err = fmt.Fprintf(o.w, format, a...)
	}
}

func (o *output) println(a ...any) {
	if o.err == nil {
		_, o.err = fmt.Fprintln(o.w, a...)
	}
}

func (o *output) print(a ...any) {
	if o.err == nil {
		_, o.err = fmt.Fprint(o.w, a...)
	}
}

// note writes a message for the person at the terminal to w (stderr). A
// failed write is dropped: stderr is where failures are reported, so there
// is nowhere left to report this one.
func note(w io.Writer, format string, a ...any) {
	_, _ = fmt.Fprintf(w, format, a...)
}

// closeInto closes c and, when the function it is deferred in has not
// already failed, returns the close error through *err.
func closeInto(err *error, c io.Closer) {
	if cerr := c.Close(); cerr != nil && *err == nil {
		*err = cerr
	}
}
