package main

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/record"
	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/runbooks/replay"
	"github.com/runbot/runbot/store"
	"github.com/runbot/runbot/timeline"
)

func newHistoryCmd(g *globalFlags) *cobra.Command {
	var (
		runbook string
		since   time.Duration
		limit   int
		format  string
	)
	cmd := &cobra.Command{
		Use:   "history",
		Short: "List recorded runs, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			// Params and requesters come from people and alerts: they
			// are redacted as in Slack.
			red, notice, err := g.cliRedactor(cmd, nil)
			if err != nil {
				return err
			}
			_, flush := redactOutput(cmd, red, notice, format == "json")
			defer flush(&err)
			st, err := store.OpenForUse(cmd.Context(), g.store)
			if err != nil {
				return err
			}
			defer closeInto(&err, st)
			f := store.RunFilter{Runbook: runbook, Limit: limit}
			if since > 0 {
				f.Since = time.Now().Add(-since)
			}
			runs, err := st.ListRuns(cmd.Context(), f)
			if err != nil {
				return err
			}
			if format == "json" {
				docs := make([]runDoc, len(runs))
				for i, r := range runs {
					r.Report = nil
					docs[i] = runDoc{RunID: r.ID, Run: r}
				}
				return json.NewEncoder(cmd.OutOrStdout()).Encode(docs)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 2, 4, 2, ' ', 0)
			w := newOutput(tw)
			w.println("RUN\tRUNBOOK\tTRIGGER\tBY\tSTARTED\tSTATUS\tOUTCOME\tDIAGNOSIS")
			for _, r := range runs {
				diag := "-"
				if rep, err := record.ReportOf(r); err == nil && len(rep.Diagnoses) > 0 {
					diag = rep.Diagnoses[0].ID
				}
				w.printf("%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Runbook, r.Trigger, dash(r.RequestedBy),
					r.StartedAt.UTC().Format("2006-01-02 15:04:05Z"), r.Status, dash(string(r.Outcome)), diag)
			}
			if w.err != nil {
				return w.err
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&runbook, "runbook", "", "only runs of this runbook")
	cmd.Flags().DurationVar(&since, "since", 0, "only runs started within this long, e.g. 24h")
	cmd.Flags().IntVar(&limit, "limit", 50, "at most this many runs")
	cmd.Flags().StringVar(&format, "format", "text", "output format: text or json")
	return cmd
}

// remediationMarkers marks on the timeline when each action of the run's
// plans started and finished.
func remediationMarkers(cmd *cobra.Command, st store.Store, plans []store.Plan) []timeline.Marker {
	var out []timeline.Marker
	for _, p := range plans {
		acts, err := st.Actions(cmd.Context(), p.ID)
		if err != nil {
			continue
		}
		for _, a := range acts {
			out = append(out, timeline.Marker{Time: a.StartedAt, Label: a.Action + " " + a.Target})
		}
		if !p.FinishedAt.IsZero() {
			out = append(out, timeline.Marker{Time: p.FinishedAt, Label: "remediation " + string(p.State)})
		}
	}
	return out
}

func newShowCmd(g *globalFlags) *cobra.Command {
	var format, timelinePath, exportDir string
	var redact []string
	cmd := &cobra.Command{
		Use:   "show RUN_ID",
		Short: "Show a recorded run: findings, diagnosis, evidence, remediation and audit trail",
		Long: "Show a recorded run: findings, diagnosis, evidence, remediation and audit trail.\n\n" +
			"With --export DIR, the run's report is written to DIR as a recording for runbot test:\n" +
			"each step's result (values, evidence, events) as the store kept it, redacted. The store\n" +
			"keeps no raw observations, so its replay re-evaluates findings and diagnoses without\n" +
			"running the checks again; runbot run --record keeps everything.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			if exportDir != "" {
				if err := emptyDir(exportDir); err != nil {
					return fmt.Errorf("--export: %w", err)
				}
			}
			red, notice, err := g.cliRedactor(cmd, redact)
			if err != nil {
				return err
			}
			// Everything printed about the run is redacted as Slack's
			// messages are: a terminal is shared (a screen share, a
			// paste into a ticket) like a channel.
			stdout, flush := redactOutput(cmd, red, notice, format == "json")
			defer flush(&err)
			st, err := store.OpenForUse(cmd.Context(), g.store)
			if err != nil {
				return err
			}
			defer closeInto(&err, st)
			run, err := st.GetRun(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if format == "markdown" {
				return writePostmortem(cmd, st, run.ID, red)
			}
			plans, err := st.ListPlans(cmd.Context(), store.PlanFilter{RunID: run.ID})
			if err != nil {
				return err
			}
			audit, err := st.Audit(cmd.Context(), store.AuditFilter{RunID: run.ID})
			if err != nil {
				return err
			}
			// A plan keeps its secret params' values, as applying it needs
			// them; shown (its body, the audit trail), they are hidden.
			if red, err = stdout.alsoHide(remediation.PlanSecrets(plans)...); err != nil {
				return err
			}
			if exportDir != "" {
				rep, err := record.ReportOf(run)
				if err != nil {
					return err
				}
				rec, err := replay.ExportReport(rep)
				if err != nil {
					return err
				}
				if err := saveRecording(rec, exportDir, rep, red); err != nil {
					return err
				}
				note(cmd.ErrOrStderr(), "recording: %s (results only: the store keeps no raw observations)\n", exportDir)
			}
			if timelinePath != "" {
				rep, err := record.ReportOf(run)
				if err != nil {
					return err
				}
				shown := new(runbooks.Report)
				if err := red.Copy(rep, shown); err != nil {
					return err
				}
				writeTimeline(cmd, timelinePath, shown, remediationMarkers(cmd, st, plans))
			}
			if format == "json" {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(map[string]any{"run": runDoc{RunID: run.ID, Run: run}, "plans": plans, "audit": audit})
			}
			out := newOutput(cmd.OutOrStdout())
			out.printf("run %s  %s  %s by %s  status %s\n", run.ID, run.Runbook, run.Trigger, dash(run.RequestedBy), run.Status)
			if rep, err := record.ReportOf(run); err == nil {
				out.println()
				if err := printReport(out, rep, false); err != nil {
					return err
				}
			}
			for _, p := range plans {
				out.printf("\nplan %s  %s for %s on %s: %s (hash %.12s)\n", p.ID, p.Remediation, p.Diagnosis, p.Deployment, p.State, p.Hash)
			}
			if len(audit) > 0 {
				out.println("\nAudit trail")
				for _, e := range audit {
					out.printf("  %s  %-22s %-12s %s\n", e.At.UTC().Format("15:04:05.000Z"), e.Kind, dash(e.Actor), string(e.Detail))
				}
			}
			return out.err
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output format: text, json, or markdown (a postmortem draft, redacted)")
	cmd.Flags().StringVar(&timelinePath, "timeline", "", "draw the run's evidence timeline into this PNG file")
	cmd.Flags().StringVar(&exportDir, "export", "", "write the run's results into this directory as a recording (for runbot test)")
	cmd.Flags().StringArrayVar(&redact, "redact", nil, "also redact matches of this regular expression in what is printed and exported (repeatable)")
	return cmd
}

// runDoc is a recorded run in the CLI's JSON: its id is also run_id, the
// name `runbot run --format json` gives it, so one jq filter reads both;
// id stays for the scripts that already read it.
type runDoc struct {
	RunID string `json:"run_id"`
	store.Run
}
