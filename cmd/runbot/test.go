package main

import (
	"encoding/json"
	"fmt"
	"io"
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
				suite.Finished = func(name string, res replay.TestResult) { testFinished(out, name, res) }
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
				testSummary(out, suite, time.Since(start))
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

// testFinished writes a case's go-test-style result line, and for a
// failure what was expected and the evidence behind what it gave.
func testFinished(out io.Writer, name string, res replay.TestResult) {
	if res.Passed {
		console.Note(out, "--- PASS: %s (%.3fs)\n", name, res.Duration.Seconds())
		return
	}
	console.Note(out, "--- FAIL: %s (%.3fs)\n", name, res.Duration.Seconds())
	console.TestFailure(out, res)
}

// testSummary ends the text output as go test does, after the problems
// and warnings.
func testSummary(out *console.Output, s *replay.Suite, elapsed time.Duration) {
	for _, p := range s.Problems {
		out.Println(p)
	}
	for _, w := range s.Warnings {
		out.Println("warning: " + w)
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
