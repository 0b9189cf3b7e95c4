package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/runbot/runbot/console"
	"github.com/runbot/runbot/incident"
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
				return console.RunsJSON(cmd.OutOrStdout(), runs)
			}
			return console.Runs(cmd.OutOrStdout(), runs)
		},
	}
	cmd.Flags().StringVar(&runbook, "runbook", "", "only runs of this runbook")
	cmd.Flags().DurationVar(&since, "since", 0, "only runs started within this long, e.g. 24h")
	cmd.Flags().IntVar(&limit, "limit", 50, "at most this many runs")
	cmd.Flags().StringVar(&format, "format", "text", "output format: text or json")
	return cmd
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
			"running the checks again; runbot run --record keeps everything.\n\n" +
			"With --timeline FILE, the run's evidence timeline is drawn into FILE (PNG). A run whose\n" +
			"checks observed nothing over time (no HTTP probe, log progress or metric sample) has\n" +
			"none: show then says so and exits 1.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			if exportDir != "" {
				if err := replay.CheckDir(exportDir); err != nil {
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
				return incident.WritePostmortem(cmd.Context(), cmd.OutOrStdout(), st, run.ID, red)
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
			if red, err = stdout.AlsoHide(remediation.PlanSecrets(plans)...); err != nil {
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
				if err := rec.SaveRedacted(exportDir, rep, red); err != nil {
					return err
				}
				console.Note(cmd.ErrOrStderr(), "recording: %s (results only: the store keeps no raw observations)\n", exportDir)
			}
			if timelinePath != "" {
				inc, err := incident.LoadRedacted(cmd.Context(), st, run.ID, red)
				if err != nil {
					return err
				}
				// The picture is all --timeline asks for: without one the
				// command failed, and a script must not take the file for
				// drawn.
				if err := timeline.WriteIncidentPNG(timelinePath, inc); err != nil {
					return err
				}
				console.Note(cmd.ErrOrStderr(), "timeline: %s\n", timelinePath)
			}
			if format == "json" {
				return console.RunJSON(cmd.OutOrStdout(), run, plans, audit)
			}
			return console.Run(cmd.OutOrStdout(), run, plans, audit)
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output format: text, json, or markdown (a postmortem draft, redacted)")
	cmd.Flags().StringVar(&timelinePath, "timeline", "", "draw the run's evidence timeline into this PNG file")
	cmd.Flags().StringVar(&exportDir, "export", "", "write the run's results into this directory as a recording (for runbot test)")
	cmd.Flags().StringArrayVar(&redact, "redact", nil, "also redact matches of this regular expression in what is printed and exported (repeatable)")
	return cmd
}
