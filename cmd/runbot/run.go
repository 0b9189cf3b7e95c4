package main

import (
	"fmt"
	"os"
	"os/user"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/runbot/runbot/approvals"
	"github.com/runbot/runbot/console"
	"github.com/runbot/runbot/internal/redact"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/engine"
	"github.com/runbot/runbot/runbooks/record"
	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/runbooks/replay"
	"github.com/runbot/runbot/store"
	"github.com/runbot/runbot/timeline"
)

// writeTimeline draws the timeline of runbot run --timeline. No picture,
// for whatever reason timeline.WritePNG gives, is noted on stderr but never
// fails the run, whose diagnosis matters more than its picture; show
// --timeline, which is asked for the picture only, fails instead.
func writeTimeline(cmd *cobra.Command, path string, rep *runbooks.Report) {
	if err := timeline.WritePNG(path, rep, timeline.Options{}); err != nil {
		console.Note(cmd.ErrOrStderr(), "runbot: %v\n", err)
		return
	}
	console.Note(cmd.ErrOrStderr(), "timeline: %s\n", path)
}

// remediateFlags control what happens after a diagnosis proposes a fix.
type remediateFlags struct {
	remediate   bool
	dryRun      bool
	approveAs   string
	requestedBy string
	groups      []string
}

// runCmd is `runbot run`: its flags, and the steps of one run.
type runCmd struct {
	g  *globalFlags
	f  *runFlags
	rf *remediateFlags
	ff *fleetFlags

	format, timelinePath, recordDir string
	redact                          []string
}

func newRunCmd(g *globalFlags) *cobra.Command {
	o := &runCmd{g: g, f: &runFlags{}, rf: &remediateFlags{}, ff: &fleetFlags{}}
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
		RunE: o.run,
	}
	o.f.register(cmd)
	o.ff.register(cmd)
	cmd.Flags().StringVar(&o.format, "format", "text", "output format: text or json")
	cmd.Flags().StringVar(&o.timelinePath, "timeline", "", "also draw the run's evidence timeline into this PNG file")
	cmd.Flags().StringVar(&o.recordDir, "record", "", "write what the checks observed into this directory (for runbot test)")
	cmd.Flags().StringArrayVar(&o.redact, "redact", nil, "also redact matches of this regular expression in what is printed and recorded (repeatable; a group redacts only itself)")
	cmd.Flags().BoolVar(&o.rf.remediate, "remediate", false, "propose the diagnosis' remediation, ask for approval, apply, verify")
	cmd.Flags().BoolVar(&o.rf.dryRun, "dry-run", false, "show the remediation plan and diff; change nothing")
	cmd.Flags().StringVar(&o.rf.approveAs, "approve-as", "", "approve as this user without a prompt (scripted use; the policy still applies)")
	cmd.Flags().StringVar(&o.rf.requestedBy, "requested-by", "", "who asks for the run (default: the OS user)")
	cmd.Flags().StringArrayVar(&o.rf.groups, "group", nil, "approver group as NAME=user1,user2 (repeatable), for @NAME in approval policies")
	return cmd
}

// run checks the flags, sets up redacted output and runs one deployment's
// run or a fleet run.
func (o *runCmd) run(cmd *cobra.Command, args []string) (err error) {
	if o.format != "text" && o.format != "json" {
		return fmt.Errorf("--format %q: want text or json", o.format)
	}
	groups, err := approvals.ParseGroups(o.rf.groups)
	if err != nil {
		return err
	}
	// What the run prints (and records) is redacted as Slack's messages
	// are; a bad --redact pattern is found before the run, not after it.
	red, notice, err := o.g.cliRedactor(cmd, o.redact)
	if err != nil {
		return err
	}
	stdout, flush := redactOutput(cmd, red, notice, o.format == "json")
	defer flush(&err)
	if o.rf.requestedBy == "" {
		o.rf.requestedBy = currentUser()
	}
	if o.ff.on() {
		if o.rf.remediate || o.rf.dryRun || o.timelinePath != "" || o.recordDir != "" {
			return fmt.Errorf("--remediate, --dry-run, --timeline and --record apply to one deployment's run, not a fleet run")
		}
		return runFleet(cmd, o.g, o.f, o.ff, args[0], o.format, o.rf.requestedBy)
	}
	return o.runOne(cmd, args[0], stdout, groups)
}

// runOne runs one deployment's run, records it, prints it, and remediates
// when asked to.
func (o *runCmd) runOne(cmd *cobra.Command, name string, stdout *redact.Writer, groups remediation.Groups) (err error) {
	pr, err := prepare(cmd.Context(), cmd, o.g, o.f, name)
	if err != nil {
		return err
	}
	defer pr.close()
	// The run's secret params are hidden in all it prints and records,
	// also where a command printed them.
	red, err := stdout.AlsoHide(pr.p.Secrets()...)
	if err != nil {
		return err
	}
	st, err := store.OpenLeased(cmd.Context(), o.g.store)
	if err != nil {
		return err
	}
	defer closeInto(&err, st)

	rep, err := o.diagnose(cmd, pr, st, red)
	if err != nil {
		return err
	}
	code := exitFor(rep.Outcome)
	var remOut *approvals.Outcome
	if o.rf.remediate || o.rf.dryRun {
		// The plan must show before the approval prompt.
		if o.format == "text" {
			if err := stdout.Direct(); err != nil {
				return fmt.Errorf("write report: %w", err)
			}
		}
		t := &approvals.Terminal{Remediator: &remediation.Remediator{Engine: pr.engine, Store: st, Catalog: pr.catalog, Groups: groups},
			DryRun: o.rf.dryRun, ApproveAs: o.rf.approveAs, RequestedBy: o.rf.requestedBy, Text: o.format == "text",
			In: cmd.InOrStdin(), Out: cmd.OutOrStdout(), Prompt: cmd.ErrOrStderr()}
		if remOut, err = t.Remediate(cmd.Context(), pr.p, rep); err != nil {
			return err
		}
		if remOut != nil && remOut.Fixed() {
			code = exitOK
		}
	}
	if o.format == "json" {
		if err := approvals.WriteReport(cmd.OutOrStdout(), rep, remOut); err != nil {
			return err
		}
	}
	if code != exitOK {
		return exitError{code}
	}
	return nil
}

// diagnose runs and records the diagnosis, with progress at a terminal,
// writes the recording (--record) and prints the report (text) and the
// timeline (--timeline).
func (o *runCmd) diagnose(cmd *cobra.Command, pr *prepared, st store.Store, red *redact.Redactor) (*runbooks.Report, error) {
	opts := engine.RunOptions{Trigger: "cli"}
	tty := isTTY(os.Stderr) && o.format == "text"
	if tty {
		opts.Progress = console.ProgressFunc(cmd.ErrOrStderr(), time.Now())
	}
	var rec *replay.Recording
	if o.recordDir != "" {
		if err := replay.CheckDir(o.recordDir); err != nil {
			return nil, fmt.Errorf("--record: %w", err)
		}
		rec = replay.NewRecording()
		pr.engine.Tape = rec
	}
	rep, err := record.RunAndRecord(cmd.Context(), pr.engine, st, pr.p, opts, o.rf.requestedBy)
	// The recording is of the diagnosis only: a remediation's
	// verification runs are live runs of their own.
	pr.engine.Tape = nil
	if tty {
		console.ClearLine(cmd.ErrOrStderr())
	}
	if err != nil {
		return nil, err
	}
	if rec != nil {
		if err := rec.SaveRedacted(o.recordDir, rep, red); err != nil {
			return nil, err
		}
		console.Note(cmd.ErrOrStderr(), "recording: %s\n", o.recordDir)
	}
	if o.format == "text" {
		if err := console.Report(cmd.OutOrStdout(), rep, isTTY(os.Stdout)); err != nil {
			return nil, fmt.Errorf("write report: %w", err)
		}
	}
	if o.timelinePath != "" {
		shown := new(runbooks.Report)
		if err := red.Copy(rep, shown); err != nil {
			return nil, err
		}
		writeTimeline(cmd, o.timelinePath, shown)
	}
	return rep, nil
}

// exitFor is the exit status of a run (or a fleet run) with this outcome.
func exitFor(o runbooks.Outcome) int {
	switch o {
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
