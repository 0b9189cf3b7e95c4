package main

import (
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/runbot/runbot/internal/yamlnode"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/replay"
)

func newTestCmd(g *globalFlags) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "test PATH...",
		Short: "Replay recorded runs against runbooks and check their verdicts (like promtool test rules)",
		Long: "Run the runbook test files (*" + runbooks.TestFileSuffix + ") in the given files or directories.\n" +
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
			files, err := testFiles(paths)
			if err != nil {
				return err
			}
			if len(files) == 0 {
				return fmt.Errorf("no test files (*%s) in %s", runbooks.TestFileSuffix, strings.Join(paths, ", "))
			}
			out := cmd.OutOrStdout()
			if format == "json" {
				// The JSON document comes at the end; progress lines would
				// break it.
				out = io.Discard
			}
			doc := testDoc{Results: []replay.TestResult{}, Problems: []string{}, Warnings: []string{}, expected: map[string][]string{}}
			start := time.Now()
			for _, f := range files {
				doc.run(cmd, g, f, out)
			}
			doc.coverage(paths)
			doc.Passed = doc.Failed == 0 && len(doc.Problems) == 0
			elapsed := time.Since(start)
			if format == "json" {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				if err := enc.Encode(doc); err != nil {
					return fmt.Errorf("write results: %w", err)
				}
			} else {
				for _, p := range doc.Problems {
					_, _ = fmt.Fprintln(out, p)
				}
				for _, w := range doc.Warnings {
					_, _ = fmt.Fprintln(out, "warning: "+w)
				}
				verdict := "ok"
				if !doc.Passed {
					verdict = "FAIL"
					_, _ = fmt.Fprintln(out, "FAIL")
				}
				_, _ = fmt.Fprintf(out, "%s\t%d test(s), %d failed\t%.3fs\n", verdict, len(doc.Results), doc.Failed, elapsed.Seconds())
			}
			if !doc.Passed {
				return exitError{exitBadInput}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output format: text or json")
	return cmd
}

// testDoc is the JSON document of runbot test.
type testDoc struct {
	Passed  bool                `json:"passed"`
	Failed  int                 `json:"failed"`
	Results []replay.TestResult `json:"results"`
	// Problems are test files that could not be read, as file:line:col.
	Problems []string `json:"problems"`
	// Warnings name the runbooks in the directories tested that have no
	// test case, and the diagnoses that no case expects.
	Warnings []string `json:"warnings"`

	// expected holds, per runbook name, the diagnoses its cases expect.
	expected map[string][]string
}

// coverage warns about runbooks in the tested directories that no test
// file tests, and about diagnoses no case expects: a shipped runbook is
// to have a recorded case for each diagnosis it can give.
func (doc *testDoc) coverage(paths []string) {
	for _, path := range paths {
		if st, err := os.Stat(path); err != nil || !st.IsDir() {
			continue
		}
		files, err := runbooks.RunbookFiles(path)
		if err != nil {
			continue
		}
		for _, f := range files {
			rb, _, err := runbooks.LoadFile(f)
			if err != nil || rb == nil {
				continue // lint's business
			}
			want, tested := doc.expected[rb.Name]
			if !tested {
				doc.Warnings = append(doc.Warnings, fmt.Sprintf("%s: runbook %s has no test cases (%s)", f, rb.Name, rb.Name+runbooks.TestFileSuffix))
				continue
			}
			for _, d := range rb.Diagnoses {
				if !slices.Contains(want, d.ID) {
					doc.Warnings = append(doc.Warnings, fmt.Sprintf("%s: diagnosis %s of runbook %s is expected by no test case", f, d.ID, rb.Name))
				}
			}
		}
	}
}

// run runs one test file's cases, writing go-test-style lines to out.
func (doc *testDoc) run(cmd *cobra.Command, g *globalFlags, path string, out io.Writer) {
	tf, problems, err := replay.LoadTestFile(path)
	if err != nil {
		doc.Problems = append(doc.Problems, err.Error())
		return
	}
	for _, p := range problems {
		doc.Problems = append(doc.Problems, p.String())
	}
	if tf == nil {
		return
	}
	rb, err := testRunbook(g, tf)
	if err != nil {
		doc.Problems = append(doc.Problems, fmt.Sprintf("%s: %v", path, err))
		return
	}
	if _, ok := doc.expected[rb.Name]; !ok {
		doc.expected[rb.Name] = []string{}
	}
	for _, c := range tf.Cases {
		doc.expected[rb.Name] = append(doc.expected[rb.Name], c.Expect.Diagnoses...)
		name := rb.Name + "/" + c.Name
		_, _ = fmt.Fprintf(out, "=== RUN   %s\n", name)
		res := replay.RunTest(cmd.Context(), rb, tf, c)
		doc.Results = append(doc.Results, res)
		if res.Passed {
			_, _ = fmt.Fprintf(out, "--- PASS: %s (%.3fs)\n", name, res.Duration.Seconds())
			continue
		}
		doc.Failed++
		_, _ = fmt.Fprintf(out, "--- FAIL: %s (%.3fs)\n", name, res.Duration.Seconds())
		writeFailure(out, res)
	}
}

// writeFailure shows what was expected and what the replay gave, and the
// evidence behind what it gave, indented like go test's log lines.
func writeFailure(out io.Writer, res replay.TestResult) {
	if res.Error != "" {
		_, _ = fmt.Fprintf(out, "    %s:%d:%d: %s\n", res.File, res.Line, res.Col, res.Error)
		return
	}
	for _, f := range res.Failures {
		_, _ = fmt.Fprintf(out, "    %s:%d:%d: %s\n        expected: %s\n        got:      %s\n", res.File, f.Line, f.Col, f.What, f.Expected, f.Got)
	}
	rep := res.Report
	if rep == nil {
		return
	}
	_, _ = fmt.Fprintf(out, "    evidence (outcome %s):\n", rep.Outcome)
	for _, d := range rep.Diagnoses {
		_, _ = fmt.Fprintf(out, "        diagnosis %s: %s\n", d.ID, d.Summary)
	}
	for _, f := range rep.Findings {
		_, _ = fmt.Fprintf(out, "        finding %s (%s): %s\n", f.ID, f.Severity, f.Summary)
		for _, e := range f.Evidence {
			_, _ = fmt.Fprintf(out, "            %s\n", e)
		}
	}
	for _, f := range rep.Inconclusive {
		_, _ = fmt.Fprintf(out, "        inconclusive %s: %s\n", f.ID, f.Reason)
	}
	for _, s := range rep.Steps {
		if s.Error != "" {
			_, _ = fmt.Fprintf(out, "        step %s on %s %s: %s\n", s.Step, s.Target, s.Status, s.Error)
		}
	}
}

// testRunbook finds the runbook a test file names: the file NAME.yaml
// beside the test file (the runbook under test, as it is on disk), else
// one in --runbooks or a built-in of that name.
func testRunbook(g *globalFlags, tf *replay.TestFile) (*runbooks.Runbook, error) {
	beside := filepath.Join(filepath.Dir(tf.Path), tf.Runbook+".yaml")
	if _, err := os.Stat(beside); err == nil {
		rb, problems, err := runbooks.LoadFile(beside)
		if err != nil {
			return nil, err
		}
		if rb == nil {
			return nil, fmt.Errorf("runbook does not load:\n%s", problemLines(problems))
		}
		return rb, nil
	}
	c, problems, err := runbooks.LoadCatalog(g.runbookDirs...)
	if err != nil {
		return nil, err
	}
	// Another runbook's problems are lint's business; only the one under
	// test must load.
	rb, err := c.Get(tf.Runbook)
	if err != nil && len(problems.Errors()) > 0 {
		return nil, fmt.Errorf("%w; runbooks that do not load:\n%s", err, problemLines(problems))
	}
	return rb, err
}

func problemLines(ps yamlnode.Problems) string {
	var lines []string
	for _, p := range ps.Errors() {
		lines = append(lines, p.String())
	}
	return strings.Join(lines, "\n")
}

// testFiles lists the test files in paths (files as given, directories
// searched, leaving out testdata, which holds recordings).
func testFiles(paths []string) ([]string, error) {
	var files []string
	for _, path := range paths {
		st, err := os.Stat(path)
		if err != nil {
			return nil, fmt.Errorf("read tests: %w", err)
		}
		if !st.IsDir() {
			files = append(files, path)
			continue
		}
		err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "testdata" && p != path {
				return filepath.SkipDir
			}
			if !d.IsDir() && runbooks.IsTestFile(p) {
				files = append(files, p)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("read tests in %s: %w", path, err)
		}
	}
	return files, nil
}
