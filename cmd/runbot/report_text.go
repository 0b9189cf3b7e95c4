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
)

// palette holds ANSI colours, empty when output is not a terminal.
type palette struct{ red, yellow, green, dim, bold, reset string }

func colors(on bool) palette {
	if !on {
		return palette{}
	}
	return palette{"\033[31m", "\033[33m", "\033[32m", "\033[2m", "\033[1m", "\033[0m"}
}

func printProgress(w io.Writer, ev runbooks.Event) {
	verb := "running"
	if ev.Kind == "step_finished" {
		verb = string(ev.Run.Status)
	}
	fmt.Fprintf(w, "\r\033[K%s %s on %s", verb, ev.Run.Step, ev.Run.Target)
}

// printReport renders a report for a person at a terminal: what was wrong
// first, then the evidence, then what each step did.
func printReport(w io.Writer, rep *runbooks.Report, color bool) {
	c := colors(color)
	fmt.Fprintf(w, "%s%s%s  %s  run %s  %s\n", c.bold, rep.Runbook, c.reset, paramLine(rep.Params), rep.RunID, rep.FinishedAt.Sub(rep.StartedAt).Round(10*time.Millisecond))
	if rep.Title != "" {
		fmt.Fprintf(w, "%s%s%s\n", c.dim, rep.Title, c.reset)
	}
	fmt.Fprintln(w)
	if len(rep.Diagnoses) > 0 {
		fmt.Fprintf(w, "%sDiagnosis%s\n", c.bold, c.reset)
		for _, d := range rep.Diagnoses {
			fmt.Fprintf(w, "  %s %s%s%s: %s\n", sevTag(c, d.Severity), c.bold, d.ID, c.reset, d.Summary)
			if d.Remediation != "" {
				fmt.Fprintf(w, "      proposed remediation: %s\n", d.Remediation)
			}
		}
		fmt.Fprintln(w)
	}
	if len(rep.Findings) > 0 {
		fmt.Fprintf(w, "%sFindings%s\n", c.bold, c.reset)
		for _, f := range rep.Findings {
			fmt.Fprintf(w, "  %s %s: %s\n", sevTag(c, f.Severity), f.ID, f.Summary)
			for _, e := range f.Evidence {
				fmt.Fprintf(w, "      %s%s%s\n", c.dim, e, c.reset)
			}
		}
		fmt.Fprintln(w)
	}
	if len(rep.Inconclusive) > 0 {
		fmt.Fprintf(w, "%sCould not evaluate%s\n", c.bold, c.reset)
		for _, f := range rep.Inconclusive {
			fmt.Fprintf(w, "  %s?%s %s: %s\n", c.yellow, c.reset, f.ID, f.Reason)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "%sSteps%s\n", c.bold, c.reset)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	for _, s := range rep.Steps {
		first := ""
		if len(s.Evidence) > 0 {
			first = s.Evidence[0]
		}
		if s.Error != "" {
			first = s.Error
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", statusMark(c, s.Status), s.Step, s.Target, fmtDur(s.Duration), oneLineOf(first, 110))
	}
	tw.Flush()
	fmt.Fprintln(w)
	switch rep.Outcome {
	case runbooks.OutcomeCritical:
		fmt.Fprintf(w, "%sOutcome: critical%s\n", c.red, c.reset)
	case runbooks.OutcomeInconclusive:
		fmt.Fprintf(w, "%sOutcome: inconclusive — some steps could not run%s\n", c.yellow, c.reset)
	default:
		fmt.Fprintf(w, "%sOutcome: ok%s\n", c.green, c.reset)
	}
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
