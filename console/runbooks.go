package console

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/engine"
)

// Runbooks lists runbooks, a runbook a line with how it is triggered,
// and under it its params.
func Runbooks(w io.Writer, rbs []*runbooks.Runbook) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	o := NewOutput(tw)
	o.Println("RUNBOOK\tCOMMAND\tSCHEDULE\tALERTS\tTITLE")
	for _, rb := range rbs {
		o.Printf("%s\t%s\t%s\t%d\t%s\n", rb.Name, Dash(rb.Triggers.Command), Dash(rb.Triggers.Schedule), len(rb.Triggers.Alerts), rb.Title)
		// Under the title: the last cell of a line does not widen
		// its column.
		o.Printf("\t\t\t\t%s\n", ParamsLine(rb))
	}
	if o.err != nil {
		return o.err
	}
	return tw.Flush()
}

// ParamsLine describes a runbook's params in one line: each name with
// what a caller must know to pass it — required or its default, its type
// when not a string, its range or choices — so that nobody has to open
// the YAML to run a runbook from chat.
func ParamsLine(rb *runbooks.Runbook) string {
	if len(rb.Params) == 0 {
		return "params: none"
	}
	parts := make([]string, 0, len(rb.Params))
	for _, p := range rb.Params {
		s := p.Name
		switch {
		case p.Required:
			s += " (required)"
		case p.HasDef && p.Default == "":
			s += `=""`
		case p.HasDef:
			s += "=" + p.Default
		}
		var notes []string
		if p.Type != runbooks.ParamString {
			notes = append(notes, string(p.Type))
		}
		if p.Type == runbooks.ParamEnum && len(p.Values) > 0 {
			notes = append(notes, strings.Join(p.Values, "|"))
		}
		if p.Min != nil || p.Max != nil {
			notes = append(notes, fmt.Sprintf("%s..%s", bound(p.Min), bound(p.Max)))
		}
		if len(notes) > 0 {
			s += " [" + strings.Join(notes, ", ") + "]"
		}
		parts = append(parts, s)
	}
	return "params: " + strings.Join(parts, ", ")
}

func bound(v any) string {
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

// Fix is one remediation of a runbook and the actions it would run, as
// engine.ExplainRemediation gives them.
type Fix struct {
	Remediation *runbooks.Remediation
	Actions     []engine.ExplainedAction
}

// Explain shows what a run of p would do, running nothing: its params
// (secret ones hidden), every step with the commands and requests it
// makes on which target, and every remediation with its approvers and
// actions.
func Explain(w io.Writer, p *engine.Prepared, steps []engine.PlannedStep, fixes []Fix) error {
	out := NewOutput(w)
	rb := p.Runbook
	out.Printf("%s — %s\n", rb.Name, rb.Title)
	shown := rb.MaskSecrets(p.Text)
	for _, k := range slices.Sorted(maps.Keys(shown)) {
		out.Printf("  param %s = %s\n", k, shown[k])
	}
	out.Println()
	for _, ps := range steps {
		needs := ""
		if len(ps.Needs) > 0 {
			needs = " after " + strings.Join(ps.Needs, ", ")
		}
		out.Printf("step %s (%s) on %s, timeout %s%s\n", ps.Step, ps.Check, ps.Target, ps.Timeout, needs)
		for _, l := range ps.Lines {
			out.Printf("    %s\n", l)
		}
	}
	if len(fixes) > 0 {
		out.Println()
	}
	for _, f := range fixes {
		r := f.Remediation
		out.Printf("remediation %s (needs approval by %s", r.Name, strings.Join(r.Approval.Approvers, ", "))
		if r.Approval.TwoPerson {
			out.Print(", two-person rule")
		}
		out.Println(")")
		for _, a := range f.Actions {
			out.Printf("    %s on %s\n", a.Action, a.Target)
			for _, l := range a.Args {
				out.Printf("        %s\n", l)
			}
		}
	}
	return out.err
}
