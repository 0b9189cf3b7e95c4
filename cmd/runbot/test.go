package main

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/runbot/runbot/console"
	"github.com/runbot/runbot/runbooks/catalog"
	"github.com/runbot/runbot/runbooks/replay"
)

func newTestCmd(g *globalFlags) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "test PATH...",
		Short: "Replay recorded runs against runbooks and check their verdicts (like promtool test rules)",
		Long: "Run the runbook test files (*" + catalog.TestFileSuffix + ") in the given files or directories.\n" +
			"Each test replays a recording (made by runbot run --record, or by hand) against the\n" +
			"runbook beside the test file (or a built-in of that name), with no network and the\n" +
			"recording's clock, and checks the findings, diagnoses, remediation and outcome.\n" +
			"Output is in the style of go test; --format json gives one document.\n\n" +
			"Exit status: 0 every test passed; 1 a test failed or a file has problems.",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, paths []string) error {
			if format != "text" && format != "json" {
				return fmt.Errorf("--format %q: want text or json", format)
			}
			suite := &replay.Suite{RunbookDirs: g.runbookDirs}
			out := console.NewOutput(cmd.OutOrStdout())
			if format == "text" {
				// The JSON document comes at the end; progress lines
				// would break it.
				suite.Started = func(name string) { out.Printf("=== RUN   %s\n", name) }
				suite.Finished = func(name string, res replay.TestResult) { console.TestFinished(out, name, res) }
			}
			start := time.Now()
			if err := suite.Run(cmd.Context(), paths); err != nil {
				return err
			}
			if format == "json" {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(suite); err != nil {
					return fmt.Errorf("write results: %w", err)
				}
			} else {
				console.TestSummary(out, suite, time.Since(start))
			}
			if err := out.Err(); err != nil {
				return fmt.Errorf("write results: %w", err)
			}
			if !suite.Passed {
				return exitError{exitBadInput}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output format: text or json")
	return cmd
}
