package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/user"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/engine"
	"github.com/runbot/runbot/runbooks/record"
	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/runbooks/replay"
	"github.com/runbot/runbot/store"
	"github.com/runbot/runbot/timeline"
)

// writeTimeline draws the timeline; a failure is reported but never fails
// the run, whose diagnosis matters more than its picture.
func writeTimeline(cmd *cobra.Command, path string, rep *runbooks.Report, markers []timeline.Marker) {
	if err := timeline.WritePNG(path, rep, timeline.Options{Markers: markers}); err != nil {
		note(cmd.ErrOrStderr(), "runbot: timeline not drawn: %v\n", err)
		return
	}
	note(cmd.ErrOrStderr(), "timeline: %s\n", path)
}

// remediateFlags control what happens after a diagnosis proposes a fix.
type remediateFlags struct {
	remediate   bool
	dryRun      bool
	approveAs   string
	requestedBy string
	groups      []string
}

func newRunCmd(g *globalFlags) *cobra.Command {
	f := &runFlags{}
	rf := &remediateFlags{}
	ff := &fleetFlags{}
	var format, timelinePath, recordDir string
	var redact []string
	cmd := &cobra.Command{
		Use:   "run RUNBOOK",
		Short: "Run a runbook and report findings and diagnoses; optionally remediate, with approval",
		Long: "Run a runbook (by name, or a path to a runbook file) against an inventory.\n" +
			"Every run is recorded in the store (see runbot history / show).\n\n" +
			"With --remediate, a proposed remediation is shown with its exact plan and diff,\n" +
			"approved at the prompt (or by --approve-as USER, subject to the same policy),\n" +
			"applied, verified, and rolled back if verification fails. --dry-run shows the\n" +
			"plan and changes nothing.\n\n" +
			"With --record DIR, everything the checks observed (commands and their output,\n" +
			"units, probes, metric scrapes, clock readings) is written to DIR as plain files,\n" +
			"secrets redacted, for `runbot test` and review; DIR must not exist or be empty.\n\n" +
			"Exit status: 0 ran and found nothing critical (or remediated and verified);\n" +
			"1 could not run (bad input); 2 critical finding or diagnosis; 3 inconclusive.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			if format != "text" && format != "json" {
				return fmt.Errorf("--format %q: want text or json", format)
			}
			groups, err := parseGroups(rf.groups)
			if err != nil {
				return err
			}
			// What the run prints (and records) is redacted as Slack's
			// messages are; a bad --redact pattern is found before the
			// run, not after it.
			red, notice, err := g.cliRedactor(cmd, redact)
			if err != nil {
				return err
			}
			stdout, flush := redactOutput(cmd, red, notice, format == "json")
			defer flush(&err)
			if ff.on() {
				if rf.remediate || rf.dryRun || timelinePath != "" || recordDir != "" {
					return fmt.Errorf("--remediate, --dry-run, --timeline and --record apply to one deployment's run, not a fleet run")
				}
				if rf.requestedBy == "" {
					rf.requestedBy = currentUser()
				}
				return runFleet(cmd, g, f, ff, args[0], format, rf.requestedBy)
			}
			pr, err := prepare(cmd.Context(), cmd, g, f, args[0])
			if err != nil {
				return err
			}
			defer pr.close()
			// The run's secret params are hidden in all it prints and
			// records, also where a command printed them.
			if red, err = stdout.alsoHide(pr.p.Secrets()...); err != nil {
				return err
			}
			st, err := store.OpenLeased(cmd.Context(), g.store)
			if err != nil {
				return err
			}
			defer closeInto(&err, st)
			if rf.requestedBy == "" {
				rf.requestedBy = currentUser()
			}

			opts := engine.RunOptions{Trigger: "cli"}
			tty := isTTY(os.Stderr)
			if tty && format == "text" {
				var mu sync.Mutex
				started := time.Now()
				opts.Progress = func(ev engine.Event) {
					mu.Lock()
					defer mu.Unlock()
					printProgress(cmd.ErrOrStderr(), ev, started)
				}
			}
			var rec *replay.Recording
			if recordDir != "" {
				if err := emptyDir(recordDir); err != nil {
					return fmt.Errorf("--record: %w", err)
				}
				rec = replay.NewRecording()
				pr.engine.Tape = rec
			}
			rep, err := record.RunAndRecord(cmd.Context(), pr.engine, st, pr.p, opts, rf.requestedBy)
			// The recording is of the diagnosis only: a remediation's
			// verification runs are live runs of their own.
			pr.engine.Tape = nil
			if tty && format == "text" {
				note(cmd.ErrOrStderr(), "\r\033[K")
			}
			if err != nil {
				return err
			}
			if rec != nil {
				if err := saveRecording(rec, recordDir, rep, red); err != nil {
					return err
				}
				note(cmd.ErrOrStderr(), "recording: %s\n", recordDir)
			}
			if format == "text" {
				if err := printReport(cmd.OutOrStdout(), rep, isTTY(os.Stdout)); err != nil {
					return fmt.Errorf("write report: %w", err)
				}
			}
			if timelinePath != "" {
				shown := new(runbooks.Report)
				if err := red.Copy(rep, shown); err != nil {
					return err
				}
				writeTimeline(cmd, timelinePath, shown, nil)
			}
			code := exitFor(rep)
			var remOut *remediationOutcome
			if rf.remediate || rf.dryRun {
				// The plan must show before the approval prompt.
				if format == "text" {
					if err := stdout.Direct(); err != nil {
						return fmt.Errorf("write report: %w", err)
					}
				}
				rem := &remediation.Remediator{Engine: pr.engine, Store: st, Catalog: pr.catalog, Groups: groups}
				if remOut, err = remediate(cmd, rem, pr.p, rep, rf, format); err != nil {
					return err
				}
				if remOut != nil {
					code = remOut.exit(code)
				}
			}
			if format == "json" {
				doc := any(rep)
				if remOut != nil {
					doc = reportWithRemediation{Report: rep, Remediation: remOut}
				}
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				if err := enc.Encode(doc); err != nil {
					return fmt.Errorf("write report: %w", err)
				}
			}
			if code != exitOK {
				return exitError{code}
			}
			return nil
		},
	}
	f.register(cmd)
	ff.register(cmd)
	cmd.Flags().StringVar(&format, "format", "text", "output format: text or json")
	cmd.Flags().StringVar(&timelinePath, "timeline", "", "also draw the run's evidence timeline into this PNG file")
	cmd.Flags().StringVar(&recordDir, "record", "", "write what the checks observed into this directory (for runbot test)")
	cmd.Flags().StringArrayVar(&redact, "redact", nil, "also redact matches of this regular expression in what is printed and recorded (repeatable; a group redacts only itself)")
	cmd.Flags().BoolVar(&rf.remediate, "remediate", false, "propose the diagnosis' remediation, ask for approval, apply, verify")
	cmd.Flags().BoolVar(&rf.dryRun, "dry-run", false, "show the remediation plan and diff; change nothing")
	cmd.Flags().StringVar(&rf.approveAs, "approve-as", "", "approve as this user without a prompt (scripted use; the policy still applies)")
	cmd.Flags().StringVar(&rf.requestedBy, "requested-by", "", "who asks for the run (default: the OS user)")
	cmd.Flags().StringArrayVar(&rf.groups, "group", nil, "approver group as NAME=user1,user2 (repeatable), for @NAME in approval policies")
	return cmd
}

// reportWithRemediation is the JSON document of a run that remediated: the
// report's fields plus "remediation".
type reportWithRemediation struct {
	*runbooks.Report
	Remediation *remediationOutcome `json:"remediation"`
}

func exitFor(rep *runbooks.Report) int {
	switch rep.Outcome {
	case runbooks.OutcomeCritical:
		return exitCritical
	case runbooks.OutcomeInconclusive:
		return exitInconclusive
	}
	return exitOK
}

func isTTY(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

func currentUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return os.Getenv("USER")
}

func parseGroups(specs []string) (remediation.Groups, error) {
	g := remediation.Groups{}
	for _, s := range specs {
		name, members, ok := cutEq(s)
		if !ok || name == "" || members == "" {
			return nil, fmt.Errorf("--group %q: want NAME=user1,user2", s)
		}
		g[name] = append(g[name], splitComma(members)...)
	}
	return g, nil
}

func cutEq(s string) (string, string, bool) {
	for i := range len(s) {
		if s[i] == '=' {
			return s[:i], s[i+1:], true
		}
	}
	return "", "", false
}
