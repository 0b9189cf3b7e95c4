// Package demo is `runbot demo`: it starts a simulated SGLang
// prefill/decode deployment under load, wedges decode as in the incident,
// diagnoses it with the shipped runbook, shows the chat message, applies
// the fix once approved, verifies it and replays the burst, then stops
// everything it started.
package demo

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/runbot/runbot/chat"
	"github.com/runbot/runbot/internal/xdg"
	"github.com/runbot/runbot/inventory"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/bind"
	"github.com/runbot/runbot/runbooks/catalog"
	"github.com/runbot/runbot/runbooks/engine"
	"github.com/runbot/runbot/runbooks/record"
	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/runview"
	"github.com/runbot/runbot/slackchat"
	"github.com/runbot/runbot/store"
)

// params keep the demo under two minutes; the diagnosis logic is the
// same as with the production defaults (35 s probe, 5 samples, 60 s stall).
var params = map[string]string{
	"deployment": "sim", "probe_timeout": "8s", "samples": "3", "sample_interval": "1s", "stall_after": "5s",
}

const (
	requester = "demo-requester"
	approver  = "demo-oncall"
)

// Options say where the demo runs and how it talks.
type Options struct {
	// Out is where the demo tells what it does; In is where the approval
	// is read from, unless Yes approves without asking.
	Out io.Writer
	In  io.Reader
	Yes bool
	// Keep leaves the simulated deployment and its directory running.
	Keep bool
	// Store is the SQLite file the demo's runs and audit trail are kept
	// in, after the demo too (DefaultStore when empty).
	Store string
	// Sim is the sglang-sim binary; empty finds it next to the running
	// binary, then on $PATH.
	Sim string
	// RunbookDirs are read before the shipped runbooks, as the CLI's
	// --runbook-dir.
	RunbookDirs []string
	// PrintReport shows a report the demo did not expect, before it fails.
	PrintReport func(w io.Writer, rep *runbooks.Report) error
}

// Run runs the demo and stops what it started, whatever happened. A write
// error on Out is returned once the demo is over.
func Run(ctx context.Context, o Options) error {
	if o.Store == "" {
		o.Store = DefaultStore()
	}
	sim, err := FindSim(o.Sim)
	if err != nil {
		return err
	}
	d := &demo{out: &narrator{w: o.Out}, in: o.In, yes: o.Yes, keep: o.Keep, db: o.Store, runbookDirs: o.RunbookDirs, printReport: o.PrintReport, sim: sim}
	err = d.run(ctx)
	d.cleanup()
	if err != nil {
		return err
	}
	if d.out.err != nil {
		return fmt.Errorf("%w: %w", ErrWrite, d.out.err)
	}
	return nil
}

// ErrWrite says the demo ran but its story could not be written out.
var ErrWrite = errors.New("write demo output")

// narrator writes the demo's story and keeps the first write error, so
// that a closed terminal does not stop the cleanup.
type narrator struct {
	w   io.Writer
	err error
}

func (n *narrator) printf(format string, a ...any) {
	if n.err == nil {
		_, n.err = fmt.Fprintf(n.w, format, a...)
	}
}

// Write lets a report printer write through the narrator.
func (n *narrator) Write(p []byte) (int, error) {
	if n.err != nil {
		return 0, n.err
	}
	k, err := n.w.Write(p)
	n.err = err
	return k, err
}

type demo struct {
	out  *narrator
	in   io.Reader
	yes  bool
	keep bool
	// db is the demo's store, kept after the demo (unlike dir).
	db          string
	runbookDirs []string
	printReport func(w io.Writer, rep *runbooks.Report) error
	sim         string
	dir         string
	load        *exec.Cmd
	stage       int
	start       time.Time
}

const stages = 7

// selfCommand is how to run this runbot again from the current directory:
// "runbot" when that is what $PATH finds, else its path (bin/runbot after
// make build), so that a hint the demo prints can be pasted as it is.
func selfCommand() string {
	self, err := os.Executable()
	if err != nil {
		return "runbot"
	}
	if p, err := exec.LookPath("runbot"); err == nil {
		if a, err1 := os.Stat(p); err1 == nil {
			if b, err2 := os.Stat(self); err2 == nil && os.SameFile(a, b) {
				return "runbot"
			}
		}
	}
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, self); err == nil && !strings.HasPrefix(rel, "..") {
			if !strings.Contains(rel, string(filepath.Separator)) {
				rel = "." + string(filepath.Separator) + rel
			}
			return rel
		}
	}
	return self
}

// FindSim locates the sglang-sim binary: path when given, else next to
// the running binary, else on $PATH.
func FindSim(path string) (string, error) {
	if path == "" {
		if self, err := os.Executable(); err == nil {
			if p := filepath.Join(filepath.Dir(self), "sglang-sim"); fileExists(p) {
				path = p
			}
		}
	}
	if path == "" {
		p, err := exec.LookPath("sglang-sim")
		if err != nil {
			return "", errors.New("sglang-sim not found next to runbot or on $PATH: build it (make build) or pass --sim")
		}
		path = p
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("locate sglang-sim: %w", err)
	}
	return abs, nil
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// step announces a stage and times it.
func (d *demo) step(format string, args ...any) func(result string) {
	d.stage++
	t0 := time.Now()
	d.out.printf("\n[%d/%d] %s\n", d.stage, stages, fmt.Sprintf(format, args...))
	return func(result string) {
		d.out.printf("      ✔ %s (%s)\n", result, time.Since(t0).Round(100*time.Millisecond))
	}
}

func (d *demo) simCmd(ctx context.Context, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, d.sim, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("sglang-sim %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

func (d *demo) run(ctx context.Context) (err error) {
	d.start = time.Now()
	inv, err := d.startDeployment(ctx)
	if err != nil {
		return err
	}
	if err := d.wedge(ctx); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(d.db), 0o700); err != nil {
		return fmt.Errorf("make the demo store's directory: %w", err)
	}
	st, err := store.Open(ctx, d.db)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := st.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	cat, _, err := catalog.Load(d.runbookDirs...)
	if err != nil {
		return err
	}
	rb, err := cat.Get("sglang-pd-wedge")
	if err != nil {
		return err
	}
	eng, closeRunners := bind.NewEngine(inv)
	defer closeRunners()
	f := &fix{st: st, eng: eng, rb: rb, rem: &remediation.Remediator{Engine: eng, Store: st, Catalog: cat, Groups: remediation.Groups{"sre-oncall": {approver}}}}
	if err := d.diagnose(ctx, f); err != nil {
		return err
	}
	if err := d.approve(ctx, f); err != nil {
		return err
	}
	if err := d.apply(ctx, f); err != nil {
		return err
	}
	if err := d.replayBurst(ctx, f); err != nil {
		return err
	}
	d.out.printf("\nDemo finished in %s.\n", time.Since(d.start).Round(time.Second))
	return nil
}

// fix is the demo's run and its remediation as they go: what diagnosing
// found and proposed, which approving and applying act on.
type fix struct {
	st   store.Store
	eng  *engine.Engine
	rb   *runbooks.Runbook
	rem  *remediation.Remediator
	p    *engine.Prepared
	rep  *runbooks.Report
	run  store.Run
	prop *remediation.Proposal
}

// startDeployment starts the simulated deployment and client traffic, and
// waits until decode runs batches.
func (d *demo) startDeployment(ctx context.Context) (*inventory.Inventory, error) {
	dir, err := os.MkdirTemp("", "runbot-demo-")
	if err != nil {
		return nil, fmt.Errorf("make a demo directory: %w", err)
	}
	d.dir = dir

	done := d.step("Starting a simulated SGLang PD deployment (router, prefill, decode as separate processes)")
	if _, err := d.simCmd(ctx, "up", "--dir", dir, "--name", "sim", "--idle-refresh", "1s", "--decode-log-interval", "4"); err != nil {
		return nil, err
	}
	inv, err := inventory.Load(filepath.Join(dir, "inventory.yaml"))
	if err != nil {
		return nil, err
	}
	router := inv.Deployments["sim"].Roles["router"].URL
	done("up in " + dir + ", router at " + router)

	done = d.step("Sending client traffic (a load generator with a 5 s client timeout)")
	d.load = exec.CommandContext(ctx, d.sim, "load", "--rate", "3", "--duration", "10m", "--timeout", "5s", "--stream", "--id-prefix", "client", router)
	d.load.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Stopped as cleanup stops it: the whole process group, with SIGTERM.
	load := d.load
	load.Cancel = func() error { return syscall.Kill(-load.Process.Pid, syscall.SIGTERM) }
	if err := d.load.Start(); err != nil {
		return nil, fmt.Errorf("start the load generator: %w", err)
	}
	if err := waitForLine(ctx, filepath.Join(dir, "decode.log"), "Decode batch", 15*time.Second); err != nil {
		return nil, err
	}
	done("decode is running batches")
	return inv, nil
}

// wedge injects the incident and lets decode's silence grow.
func (d *demo) wedge(ctx context.Context) error {
	done := d.step("Injecting the incident: a burst of in-flight KV transfers aborted at once (overlap schedule on)")
	out, err := d.simCmd(ctx, "ctl", "--dir", d.dir, "fault", "pd-wedge")
	if err != nil {
		return err
	}
	if !strings.Contains(out, `"wedged":true`) {
		return fmt.Errorf("the abort burst did not wedge decode: %s", strings.TrimSpace(out))
	}
	// Let decode's silence grow past the stall threshold while /health
	// keeps answering 200, as it did for 10+ minutes in the incident.
	time.Sleep(6 * time.Second)
	done("decode is wedged; /health still says 200")
	return nil
}

// diagnose runs and records the runbook, which must diagnose the wedge
// and propose its fix, and shows the message runbot posts.
func (d *demo) diagnose(ctx context.Context, f *fix) error {
	done := d.step("Running sglang-pd-wedge: probes, counter samples, last batch, backend, overlap flag — all at once")
	var err error
	if f.p, err = f.eng.Prepare(ctx, f.rb, params); err != nil {
		return err
	}
	if f.rep, err = record.RunAndRecord(ctx, f.eng, f.st, f.p, engine.RunOptions{Trigger: runbooks.TriggerCLI}, requester); err != nil {
		return err
	}
	if f.run, err = f.st.GetRun(ctx, f.rep.RunID); err != nil {
		return err
	}
	rep := f.rep
	if len(rep.Diagnoses) == 0 || rep.Diagnoses[0].ID != "pd_transfer_wedge" {
		_ = d.printReport(d.out, rep) // a write error stays in d.out, reported when the demo ends
		return fmt.Errorf("expected the diagnosis pd_transfer_wedge, got %v", diagnosisNames(rep))
	}
	if f.prop, err = f.rem.Propose(ctx, f.p, rep, requester); err != nil {
		return err
	}
	if f.prop == nil {
		return errors.New("the diagnosis proposed no remediation")
	}
	done(fmt.Sprintf("diagnosed %s in %s", rep.Diagnoses[0].ID, rep.FinishedAt.Sub(rep.StartedAt).Round(100*time.Millisecond)))
	msg := runview.Preview(f.run, f.rb, rep, f.prop, nil, nil)
	d.out.printf("\nThis is what runbot posts to Slack:\n\n%s", msg.Text())
	d.out.printf("\n[ Dry-run diff ]\n%s\n", indent(f.prop.Body.Diff(), "  "))
	d.slack(ctx, msg)
	return nil
}

// approve asks for the approval (unless --yes) and votes as the approver.
func (d *demo) approve(ctx context.Context, f *fix) error {
	prop := f.prop
	done := d.step("Approval: %s must approve (two-person rule: %s, who asked, cannot)", strings.Join(prop.Plan.Policy.Approvers, ", "), requester)
	if !d.yes {
		answered, yes := d.confirm()
		switch {
		case !answered:
			return errors.New("no answer to the approval prompt (stdin is not a terminal?); nothing was changed: approve without asking with --yes (make demo ARGS=--yes)")
		case !yes:
			return errors.New("not approved; nothing was changed")
		}
	}
	res, err := f.rem.Vote(ctx, prop.Plan.ID, approver, true, prop.Plan.Hash)
	if err != nil {
		return err
	}
	if res.Plan.State != store.PlanApproved {
		return fmt.Errorf("plan is %s after the approval", res.Plan.State)
	}
	done("approved by " + approver + " for plan hash " + prop.Plan.Hash[:12])
	return nil
}

// apply applies the approved plan, which must verify, and shows the
// message's remediation part as it then reads.
func (d *demo) apply(ctx context.Context, f *fix) error {
	done := d.step("Applying: edit both serve scripts, restart prefill then decode, verify with a real request")
	result, err := f.rem.Apply(ctx, f.prop.Plan.ID, approver, func(ev remediation.ApplyEvent) {
		d.out.printf("      · %s: %s\n", ev.Stage, ev.Detail)
	})
	if err != nil {
		return err
	}
	if !result.Recovered {
		return fmt.Errorf("the fix did not verify: %s", result.Message)
	}
	approvals, _ := f.st.Approvals(ctx, f.prop.Plan.ID)
	final := runview.Preview(f.run, f.rb, f.rep, f.prop, approvals, result)
	d.out.printf("\nThe Slack message's remediation part then reads:\n\n%s", remediationPart(final).Text())
	d.slack(ctx, final)
	done("recovered: " + result.Message)
	return nil
}

// replayBurst replays the abort burst, which must no longer wedge decode,
// and runs the runbook again, which must find the deployment healthy.
func (d *demo) replayBurst(ctx context.Context, f *fix) error {
	done := d.step("Replaying the abort burst: with --disable-overlap-schedule it must not wedge decode")
	out, err := d.simCmd(ctx, "ctl", "--dir", d.dir, "fault", "pd-wedge")
	if err != nil {
		return err
	}
	if !strings.Contains(out, `"wedged":false`) {
		return fmt.Errorf("decode wedged again after the fix: %s", strings.TrimSpace(out))
	}
	after, err := record.RunAndRecord(ctx, f.eng, f.st, f.p, engine.RunOptions{Trigger: runbooks.TriggerCLI}, requester)
	if err != nil {
		return err
	}
	if len(after.Diagnoses) == 0 || after.Diagnoses[0].ID != "healthy" {
		_ = d.printReport(d.out, after) // a write error stays in d.out, reported when the demo ends
		return fmt.Errorf("expected healthy after the replayed burst, got %v", diagnosisNames(after))
	}
	done("same burst, no wedge: diagnosis healthy")
	return nil
}

// remediationPart keeps the title and the remediation sections, which are
// all that changed since the diagnosis was shown.
func remediationPart(m chat.Message) chat.Message {
	out := chat.Message{Title: m.Title, Status: m.Status}
	for _, s := range m.Sections {
		if strings.HasPrefix(s.Heading, "Proposed remediation") || strings.HasPrefix(s.Heading, "Remediation") {
			out.Sections = append(out.Sections, s)
		}
	}
	return out
}

func diagnosisNames(rep *runbooks.Report) []string {
	var out []string
	for _, d := range rep.Diagnoses {
		out = append(out, d.ID)
	}
	if len(out) == 0 {
		out = []string{"none"}
	}
	return out
}

// confirm asks for the approval; answered is false when stdin ended
// without a line (no terminal, /dev/null), which is not a "no".
func (d *demo) confirm() (answered, yes bool) {
	d.out.printf("      Approve as %s? [y/N] ", approver)
	line, err := bufio.NewReader(d.in).ReadString('\n')
	if err != nil && strings.TrimSpace(line) == "" {
		d.out.printf("\n")
		return false, false
	}
	return true, strings.HasPrefix(strings.ToLower(strings.TrimSpace(line)), "y")
}

// DefaultStore is the demo's own store beside the default one, in the
// user's state directory: the demo's runs are kept for a look afterwards
// without mixing them into the runs of real deployments.
func DefaultStore() string { return xdg.State("demo.db", "runbot-demo.db") }

// slack posts to a real channel when the environment names one.
func (d *demo) slack(ctx context.Context, m chat.Message) {
	token, channel := os.Getenv("SLACK_BOT_TOKEN"), os.Getenv("SLACK_CHANNEL")
	if token == "" || channel == "" {
		return
	}
	if _, err := slackchat.PostPreview(ctx, token, channel, os.Getenv("SLACK_API_URL"), m); err != nil {
		d.out.printf("      (Slack: %v)\n", err)
		return
	}
	d.out.printf("      (posted to Slack channel %s)\n", channel)
}

// cleanup stops everything the demo started, whatever happened.
func (d *demo) cleanup() {
	if d.load != nil && d.load.Process != nil {
		_ = syscall.Kill(-d.load.Process.Pid, syscall.SIGTERM)
		_ = d.load.Wait()
	}
	if d.dir == "" {
		return
	}
	if fileExists(d.db) {
		d.out.printf("The demo's runs and audit trail are kept in %s: %s history --store %s\n", d.db, selfCommand(), d.db)
	}
	if d.keep {
		d.out.printf("Kept the deployment in %s (stop it with: %s down --dir %s)\n", d.dir, d.sim, d.dir)
		return
	}
	ctx, cancel := context.WithTimeoutCause(context.Background(), 30*time.Second, errors.New("stopping the simulator took too long"))
	defer cancel()
	if _, err := d.simCmd(ctx, "down", "--dir", d.dir); err != nil {
		d.out.printf("cleanup: %v\n", err)
	}
	_ = os.RemoveAll(d.dir)
}

// waitForLine waits until a file contains a line with text.
func waitForLine(ctx context.Context, path, text string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil && strings.Contains(string(b), text) {
			return nil
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("no %q in %s after %s", text, path, timeout)
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n")
}
