package console

import (
	"encoding/json"
	"io"
	"text/tabwriter"

	"github.com/runbot/runbot/runbooks/record"
	"github.com/runbot/runbot/store"
)

// Runs shows recorded runs as a table, a run a line, with the first
// diagnosis each gave.
func Runs(w io.Writer, runs []store.Run) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	o := NewOutput(tw)
	o.Println("RUN\tRUNBOOK\tTRIGGER\tBY\tSTARTED\tSTATUS\tOUTCOME\tDIAGNOSIS")
	for _, r := range runs {
		diag := "-"
		if rep, err := record.ReportOf(r); err == nil && len(rep.Diagnoses) > 0 {
			diag = rep.Diagnoses[0].ID
		}
		o.Printf("%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Runbook, r.Trigger, Dash(r.RequestedBy),
			r.StartedAt.UTC().Format("2006-01-02 15:04:05Z"), r.Status, Dash(string(r.Outcome)), diag)
	}
	if o.err != nil {
		return o.err
	}
	return tw.Flush()
}

// Run shows one recorded run: who started it, its report, its plans and
// its audit trail.
func Run(w io.Writer, run store.Run, plans []store.Plan, audit []store.AuditEvent) error {
	out := NewOutput(w)
	out.Printf("run %s  %s  %s by %s  status %s\n", run.ID, run.Runbook, run.Trigger, Dash(run.RequestedBy), run.Status)
	if rep, err := record.ReportOf(run); err == nil {
		out.Println()
		if err := Report(out, rep, false); err != nil {
			return err
		}
	}
	for _, p := range plans {
		out.Printf("\nplan %s  %s for %s on %s: %s (hash %.12s)\n", p.ID, p.Remediation, p.Diagnosis, p.Deployment, p.State, p.Hash)
	}
	if len(audit) > 0 {
		out.Println("\nAudit trail")
		for _, e := range audit {
			out.Printf("  %s  %-22s %-12s %s\n", e.At.UTC().Format("15:04:05.000Z"), e.Kind, Dash(e.Actor), AuditDetail(e.Detail))
		}
	}
	return out.err
}

// RunDoc is a recorded run in the CLI's JSON: its id is also run_id, the
// name `runbot run --format json` gives it, so one jq filter reads both;
// id stays for the scripts that already read it.
type RunDoc struct {
	RunID string `json:"run_id"`
	store.Run
}

// RunsJSON writes runs as runbot history --format json lists them: one
// array of RunDoc, on one line, without their reports.
func RunsJSON(w io.Writer, runs []store.Run) error {
	docs := make([]RunDoc, len(runs))
	for i, r := range runs {
		r.Report = nil
		docs[i] = RunDoc{RunID: r.ID, Run: r}
	}
	return json.NewEncoder(w).Encode(docs)
}

// RunJSON writes one run as runbot show --format json shows it: the run,
// its plans and its audit trail, indented.
func RunJSON(w io.Writer, run store.Run, plans []store.Plan, audit []store.AuditEvent) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(map[string]any{"run": RunDoc{RunID: run.ID, Run: run}, "plans": plans, "audit": audit})
}
