package replay

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/runbot/runbot/remote/sshrun"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/engine"

	"go.yaml.in/yaml/v3"

	"github.com/runbot/runbot/checks"
	"github.com/runbot/runbot/internal/redact"
	"github.com/runbot/runbot/internal/step"
	"github.com/runbot/runbot/internal/target"
	"github.com/runbot/runbot/remote"
)

// RecordingFormat is the version of the recording layout Save writes and
// LoadRecording reads.
const RecordingFormat = 1

// A recording is a directory of plain files, meant to be read in review
// and edited by hand:
//
//	DIR/recording.yaml                   the run: runbook, params, times, targets
//	DIR/<step>/<role>/observed.yaml      one step on one target: status, clock
//	                                     readings, commands, units, probes, scrapes
//	DIR/<step>/<role>/cmd-N.stdout|.stderr  raw output of command N
//	DIR/<step>/<role>/read-N.data        what file read N returned
//	DIR/<step>/<role>/scrape-N.prom      raw exposition of scrape N
const (
	recordingFile = "recording.yaml"
	observedFile  = "observed.yaml"
)

// recordingDoc is recording.yaml.
type recordingDoc struct {
	Format  int               `yaml:"format"`
	Runbook string            `yaml:"runbook"`
	Note    string            `yaml:"note,omitempty"`
	RunID   string            `yaml:"run_id,omitempty"`
	Trigger runbooks.Trigger  `yaml:"trigger,omitempty"`
	Params  map[string]string `yaml:"params"`
	Started time.Time         `yaml:"started"`
	// Finished and VerdictAt are when the run ended and settled.
	Finished  time.Time        `yaml:"finished"`
	VerdictAt time.Time        `yaml:"verdict_at,omitempty"`
	Targets   []recordedTarget `yaml:"targets"`
}

// recordedTarget is what the inventory said about one target.
type recordedTarget struct {
	Role         string            `yaml:"role"`
	Deployment   string            `yaml:"deployment,omitempty"`
	Host         string            `yaml:"host,omitempty"`
	Unit         string            `yaml:"unit,omitempty"`
	URL          string            `yaml:"url,omitempty"`
	MetricsURL   string            `yaml:"metrics_url,omitempty"`
	LaunchScript string            `yaml:"launch_script,omitempty"`
	LogFile      string            `yaml:"log_file,omitempty"`
	Labels       map[string]string `yaml:"labels,omitempty"`
	// ServiceManager is the kind of service manager the target had
	// (remote.Systemctl, remote.Commands, *remote.DBus); empty for none.
	ServiceManager string `yaml:"service_manager,omitempty"`
}

// observedDoc is one observed.yaml.
type observedDoc struct {
	Step     string        `yaml:"step"`
	Check    string        `yaml:"check"`
	Target   string        `yaml:"target"`
	Host     string        `yaml:"host,omitempty"`
	Status   step.Status   `yaml:"status"`
	Error    string        `yaml:"error,omitempty"`
	Started  time.Time     `yaml:"started"`
	Duration time.Duration `yaml:"duration"`
	// Clock is every reading of the clock the check made, in order.
	Clock    []time.Time       `yaml:"clock,omitempty"`
	Commands []recordedCommand `yaml:"commands,omitempty"`
	// Reads are the files read without a command (remote.FileReader).
	Reads   []recordedRead   `yaml:"reads,omitempty"`
	Units   []recordedUnit   `yaml:"units,omitempty"`
	Probes  []recordedProbe  `yaml:"probes,omitempty"`
	Scrapes []recordedScrape `yaml:"scrapes,omitempty"`
	// Result is, instead of the observations, the step's result as a
	// stored report kept it (ExportReport).
	Result *recordedResult `yaml:"result,omitempty"`
}

// recordedCommand is one Runner.Run: its line and what it returned. Stdout
// and Stderr name files beside observed.yaml (absent: empty).
type recordedCommand struct {
	Line            string        `yaml:"line"`
	Started         time.Time     `yaml:"started"`
	Duration        time.Duration `yaml:"duration"`
	Exit            int           `yaml:"exit"`
	Stdout          string        `yaml:"stdout,omitempty"`
	Stderr          string        `yaml:"stderr,omitempty"`
	StdoutTruncated bool          `yaml:"stdout_truncated,omitempty"`
	StderrTruncated bool          `yaml:"stderr_truncated,omitempty"`
	// Error says why the command could not run or finish; the outputs
	// are then empty.
	Error string `yaml:"error,omitempty"`

	stdout, stderr []byte
}

// recordedRead is one remote.FileReader read: the file, what it held (Data
// names a file beside observed.yaml), or why it could not be read.
type recordedRead struct {
	Path      string        `yaml:"path"`
	Started   time.Time     `yaml:"started"`
	Duration  time.Duration `yaml:"duration"`
	Data      string        `yaml:"data,omitempty"`
	Truncated bool          `yaml:"truncated,omitempty"`
	ModTime   time.Time     `yaml:"mod_time,omitempty"`
	// Problem is the host's answer that the file cannot be read (a
	// remote.FileError); Error says why the read failed otherwise.
	Problem string `yaml:"problem,omitempty"`
	Error   string `yaml:"error,omitempty"`

	data []byte
}

// recordedUnit is one service manager Show.
type recordedUnit struct {
	Unit        string            `yaml:"unit"`
	Error       string            `yaml:"error,omitempty"`
	ActiveState string            `yaml:"active_state,omitempty"`
	SubState    string            `yaml:"sub_state,omitempty"`
	LoadState   string            `yaml:"load_state,omitempty"`
	Result      string            `yaml:"result,omitempty"`
	MainPID     int               `yaml:"main_pid,omitempty"`
	NRestarts   int               `yaml:"n_restarts,omitempty"`
	ExecStatus  int               `yaml:"exec_status,omitempty"`
	ActiveEnter time.Time         `yaml:"active_enter,omitempty"`
	Props       map[string]string `yaml:"props,omitempty"`
}

// recordedProbe is what one http_probe exchange saw.
type recordedProbe struct {
	URL         string        `yaml:"url"`
	RequestID   string        `yaml:"request_id"`
	Started     time.Time     `yaml:"started"`
	Outcome     string        `yaml:"outcome"`
	Status      int           `yaml:"status"`
	Bytes       int64         `yaml:"bytes"`
	Connected   bool          `yaml:"connected"`
	ConnectTime time.Duration `yaml:"connect_time"`
	FirstByte   time.Duration `yaml:"first_byte"`
	FirstData   time.Duration `yaml:"first_data"`
	Total       time.Duration `yaml:"total"`
	TimedOut    bool          `yaml:"timed_out"`
	Phase       string        `yaml:"phase"`
	Error       string        `yaml:"error,omitempty"`
	Events      int           `yaml:"events,omitempty"`
	Done        bool          `yaml:"done,omitempty"`
	Body        string        `yaml:"body,omitempty"`
}

// recordedScrape is one read of a metrics endpoint; Body names the file
// that holds the exposition.
type recordedScrape struct {
	URL   string    `yaml:"url"`
	Time  time.Time `yaml:"time"`
	Error string    `yaml:"error,omitempty"`
	Body  string    `yaml:"body,omitempty"`

	body []byte
}

func probeRecord(o checks.HTTPProbeOutput) recordedProbe {
	return recordedProbe{
		URL: o.URL, RequestID: o.RequestID, Started: o.Started, Outcome: o.Outcome, Status: o.Status, Bytes: o.Bytes,
		Connected: o.Connected, ConnectTime: o.ConnectTime, FirstByte: o.FirstByte, FirstData: o.FirstData, Total: o.Total,
		TimedOut: o.TimedOut, Phase: o.Phase, Error: o.Error, Events: o.Events, Done: o.Done, Body: o.Body,
	}
}

func (p recordedProbe) output() checks.HTTPProbeOutput {
	return checks.HTTPProbeOutput{
		OK: p.Outcome == checks.OutcomeOK, URL: p.URL, RequestID: p.RequestID, Started: p.Started, Outcome: p.Outcome, Status: p.Status,
		Bytes: p.Bytes, Connected: p.Connected, ConnectTime: p.ConnectTime, FirstByte: p.FirstByte, FirstData: p.FirstData,
		Total: p.Total, TimedOut: p.TimedOut, Phase: p.Phase, Error: p.Error, Events: p.Events, Done: p.Done, Body: p.Body,
	}
}

func unitRecord(unit string, st remote.UnitState, err error) recordedUnit {
	if err != nil {
		return recordedUnit{Unit: unit, Error: err.Error()}
	}
	return recordedUnit{
		Unit: unit, ActiveState: st.ActiveState, SubState: st.SubState, LoadState: st.LoadState, Result: st.Result,
		MainPID: st.MainPID, NRestarts: st.NRestarts, ExecStatus: st.ExecStatus, ActiveEnter: st.ActiveEnter, Props: st.Props,
	}
}

func (u recordedUnit) state() remote.UnitState {
	return remote.UnitState{
		Unit: u.Unit, ActiveState: u.ActiveState, SubState: u.SubState, LoadState: u.LoadState, Result: u.Result,
		MainPID: u.MainPID, NRestarts: u.NRestarts, ExecStatus: u.ExecStatus, ActiveEnter: u.ActiveEnter, Props: u.Props,
	}
}

// Recording is a run's observations: made live by NewRecording (as the
// engine's Tape), or read back by LoadRecording for Replay.
type Recording struct {
	// Dir is where the recording was loaded from; empty for a live one.
	Dir string

	mu   sync.Mutex
	doc  recordingDoc
	runs map[string]*observedDoc // by "<step>/<role>"
	// order keeps the target runs in the order they were taped.
	order []string
}

// NewRecording returns an empty recording to pass as Engine.Tape: every
// check's observations are kept in memory until Save writes them.
func NewRecording() *Recording {
	return &Recording{runs: map[string]*observedDoc{}}
}

// Runbook names the runbook the recording was made with.
func (r *Recording) Runbook() string { return r.doc.Runbook }

// Params are the params the recording was made with.
func (r *Recording) Params() map[string]string { return maps.Clone(r.doc.Params) }

func runKey(stepID, role string) string { return stepID + "/" + role }

// Target implements Tape for a live recording.
func (r *Recording) Target(stepID string, index int, t target.Target) engine.TargetTape {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := runKey(stepID, t.Role)
	if _, dup := r.runs[key]; dup {
		// The same role twice in one step: keep both apart.
		key = fmt.Sprintf("%s/%s-%d", stepID, t.Role, index+1)
	}
	od := &observedDoc{Step: stepID, Target: t.Role, Host: t.Host}
	r.runs[key] = od
	r.order = append(r.order, key)
	if !slices.ContainsFunc(r.doc.Targets, func(rt recordedTarget) bool { return rt.Role == t.Role && rt.Host == t.Host }) {
		r.doc.Targets = append(r.doc.Targets, recordedTarget{
			Role: t.Role, Deployment: t.Deployment, Host: t.Host, Unit: t.Unit, URL: t.URL, MetricsURL: t.MetricsURL,
			LaunchScript: t.LaunchScript, LogFile: t.LogFile, Labels: t.Labels, ServiceManager: serviceKind(t.Services),
		})
	}
	return &liveTape{od: od}
}

// RunTime implements Tape: a live recording keeps the times it is given.
func (r *Recording) RunTime(m engine.RunMoment, live time.Time) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch m {
	case engine.RunStarted:
		r.doc.Started = live
	case engine.RunFinished:
		r.doc.Finished = live
	case engine.RunVerdict:
		r.doc.VerdictAt = live
	}
	return live
}

// liveTape keeps one target run's observations. Checks may call it from
// several goroutines, hence the lock.
type liveTape struct {
	mu sync.Mutex
	od *observedDoc
}

func (lt *liveTape) Bind(t target.Target, now func() time.Time) (target.Target, func() time.Time, checks.Tape) {
	if t.Runner != nil {
		t.Runner = &recordingRunner{inner: t.Runner, tape: lt, now: now}
	}
	if t.Services != nil {
		t.Services = &recordingServices{inner: t.Services, tape: lt}
	}
	clock := func() time.Time {
		// Without its monotonic reading, which a file cannot keep: the
		// recorded run then computes its spans from the same wall-clock
		// times its replay will read back.
		v := now().Round(0)
		lt.mu.Lock()
		lt.od.Clock = append(lt.od.Clock, v)
		lt.mu.Unlock()
		return v
	}
	return t, clock, &liveNet{tape: lt}
}

func (lt *liveTape) Replayed(string) (engine.TapedOutcome, bool) {
	return engine.TapedOutcome{}, false
}

func (lt *liveTape) Finish(tr *runbooks.TargetRun) {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	lt.od.Check, lt.od.Status, lt.od.Error = tr.Check, tr.Status, tr.Error
	lt.od.Started, lt.od.Duration = tr.StartedAt, tr.Duration
}

func (lt *liveTape) add(f func(od *observedDoc)) {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	f(lt.od)
}

// recordingRunner keeps every command its inner runner ran. Stdin is not
// kept: no check sends any, and it could hold what a command must not
// show.
type recordingRunner struct {
	inner remote.Runner
	tape  *liveTape
	now   func() time.Time
}

func (rr *recordingRunner) Run(ctx context.Context, cmd remote.Command) (remote.Output, error) {
	started := rr.now()
	out, err := rr.inner.Run(ctx, cmd)
	rc := recordedCommand{
		Line: cmd.Line, Started: started, Duration: out.Duration, Exit: out.ExitCode,
		StdoutTruncated: out.StdoutTruncated, StderrTruncated: out.StderrTruncated,
		stdout: out.Stdout, stderr: out.Stderr,
	}
	if err != nil {
		rc.Error = err.Error()
	}
	rr.tape.add(func(od *observedDoc) { od.Commands = append(od.Commands, rc) })
	return out, err
}

// ReadFile implements remote.FileReader when the inner runner does, and
// keeps what it read; a runner that reads no files itself makes
// remote.ReadFile run a command, which Run keeps.
func (rr *recordingRunner) ReadFile(ctx context.Context, path string, max int) (remote.File, error) {
	fr, ok := rr.inner.(remote.FileReader)
	if !ok {
		return remote.File{}, remote.ErrNoFileReader
	}
	started := rr.now()
	f, err := fr.ReadFile(ctx, path, max)
	if errors.Is(err, remote.ErrNoFileReader) {
		return f, err
	}
	rd := recordedRead{Path: path, Started: started, Duration: rr.now().Sub(started), Truncated: f.Truncated, ModTime: f.ModTime, data: f.Data}
	var fe *remote.FileError
	switch {
	case errors.As(err, &fe):
		rd.Problem = fe.Reason
	case err != nil:
		rd.Error = err.Error()
	}
	rr.tape.add(func(od *observedDoc) { od.Reads = append(od.Reads, rd) })
	return f, err
}

func (rr *recordingRunner) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	return rr.inner.DialContext(ctx, network, addr)
}

func (rr *recordingRunner) Host() string { return rr.inner.Host() }

// Connect lets a probe make sure the host is reachable before it dials
// through it, as it does without a recording.
func (rr *recordingRunner) Connect(ctx context.Context) error {
	if c, ok := rr.inner.(interface{ Connect(context.Context) error }); ok {
		return c.Connect(ctx)
	}
	return nil
}

// recordingServices keeps every unit its inner manager showed. Restarts
// are passed through unrecorded: checks never restart anything.
type recordingServices struct {
	inner remote.ServiceManager
	tape  *liveTape
}

func (rs *recordingServices) Show(ctx context.Context, unit string) (remote.UnitState, error) {
	st, err := rs.inner.Show(ctx, unit)
	ru := unitRecord(unit, st, err)
	rs.tape.add(func(od *observedDoc) { od.Units = append(od.Units, ru) })
	return st, err
}

func (rs *recordingServices) Restart(ctx context.Context, unit string) error {
	return rs.inner.Restart(ctx, unit)
}

func (rs *recordingServices) RestartCall(unit string) string { return rs.inner.RestartCall(unit) }

// liveNet performs the network checks' exchanges and keeps them.
type liveNet struct{ tape *liveTape }

func (ln *liveNet) Probe(_ context.Context, _ string, do func() checks.HTTPProbeOutput) (checks.HTTPProbeOutput, error) {
	o := do()
	ln.tape.add(func(od *observedDoc) { od.Probes = append(od.Probes, probeRecord(o)) })
	return o, nil
}

func (ln *liveNet) Scrape(_ context.Context, url string, do func() checks.Scrape) (checks.Scrape, error) {
	sc := do()
	rs := recordedScrape{URL: url, Time: sc.Time, Error: sc.Err, body: sc.Body}
	ln.tape.add(func(od *observedDoc) { od.Scrapes = append(od.Scrapes, rs) })
	return sc, nil
}

func (ln *liveNet) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// SaveOptions say how a recording is written.
type SaveOptions struct {
	// Redact, when set, is applied to every text the recording holds
	// (command lines and outputs, errors, probe bodies, expositions,
	// params) before it is written: a recording is meant to be shared.
	Redact func(string) string
}

// SaveRedacted is Save with every text redacted by red, as the CLI saves
// what runbot run --record records and runbot show --export exports: a
// recording is meant to be checked in and shared like a message.
func (r *Recording) SaveRedacted(dir string, rep *runbooks.Report, red *redact.Redactor) error {
	if err := r.Save(dir, rep, SaveOptions{Redact: red.Redact}); err != nil {
		return fmt.Errorf("save recording: %w", err)
	}
	return nil
}

// Save writes the recording of rep into dir, which must not exist or be
// empty: a recording is never merged into another.
func (r *Recording) Save(dir string, rep *runbooks.Report, opts SaveOptions) error {
	redact := opts.Redact
	if redact == nil {
		redact = func(s string) string { return s }
	}
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return fmt.Errorf("save recording: %s is not empty", dir)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("save recording: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	doc := r.doc
	doc.Format, doc.Runbook, doc.RunID, doc.Trigger = RecordingFormat, rep.Runbook, rep.RunID, rep.Trigger
	doc.Params = map[string]string{}
	for k, v := range rep.Params {
		doc.Params[k] = redact(v)
	}
	if err := writeYAML(filepath.Join(dir, recordingFile), doc); err != nil {
		return err
	}
	for _, key := range r.order {
		od := *r.runs[key]
		sub := filepath.Join(dir, filepath.FromSlash(key))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			return fmt.Errorf("save recording: %w", err)
		}
		od.Error = redact(od.Error)
		od.Commands = slices.Clone(od.Commands)
		for i := range od.Commands {
			c := &od.Commands[i]
			c.Line, c.Error = redact(c.Line), redact(c.Error)
			var err error
			if c.Stdout, err = writeRaw(sub, fmt.Sprintf("cmd-%d.stdout", i+1), redact(string(c.stdout))); err != nil {
				return err
			}
			if c.Stderr, err = writeRaw(sub, fmt.Sprintf("cmd-%d.stderr", i+1), redact(string(c.stderr))); err != nil {
				return err
			}
		}
		od.Reads = slices.Clone(od.Reads)
		for i := range od.Reads {
			rd := &od.Reads[i]
			rd.Path, rd.Problem, rd.Error = redact(rd.Path), redact(rd.Problem), redact(rd.Error)
			var err error
			if rd.Data, err = writeRaw(sub, fmt.Sprintf("read-%d.data", i+1), redact(string(rd.data))); err != nil {
				return err
			}
		}
		od.Units = slices.Clone(od.Units)
		for i := range od.Units {
			u := &od.Units[i]
			u.Error = redact(u.Error)
			if u.Props != nil {
				props := map[string]string{}
				for k, v := range u.Props {
					props[k] = redact(v)
				}
				u.Props = props
			}
		}
		od.Probes = slices.Clone(od.Probes)
		for i := range od.Probes {
			p := &od.Probes[i]
			p.URL, p.Error, p.Body = redact(p.URL), redact(p.Error), redact(p.Body)
		}
		od.Scrapes = slices.Clone(od.Scrapes)
		for i := range od.Scrapes {
			s := &od.Scrapes[i]
			s.URL, s.Error = redact(s.URL), redact(s.Error)
			var err error
			if s.Body, err = writeRaw(sub, fmt.Sprintf("scrape-%d.prom", i+1), redact(string(s.body))); err != nil {
				return err
			}
		}
		od.Result = redactResult(od.Result, redact)
		if err := writeYAML(filepath.Join(sub, observedFile), od); err != nil {
			return err
		}
	}
	return nil
}

func writeYAML(path string, v any) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("save recording: %w", err)
	}
	var b strings.Builder
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("save recording %s: %w", path, err)
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("save recording %s: %w", path, err)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("save recording: %w", err)
	}
	return nil
}

// writeRaw writes text as a file beside observed.yaml and returns its
// name, or nothing when there is no text (absence reads as empty).
func writeRaw(dir, name, text string) (string, error) {
	if text == "" {
		return "", nil
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
		return "", fmt.Errorf("save recording: %w", err)
	}
	return name, nil
}

// serviceKind names a service manager for the recording as an inventory
// names it (service_manager.type), not by its Go type.
func serviceKind(s remote.ServiceManager) string {
	switch s.(type) {
	case nil:
		return ""
	case remote.Systemctl, *remote.Systemctl, sshrun.Systemd, *sshrun.Systemd:
		return "systemd"
	case *remote.DBus:
		return "systemd (D-Bus)"
	case remote.Commands, *remote.Commands:
		return "command"
	}
	return fmt.Sprintf("%T", s)
}

// CheckDir checks, before a run starts, that a recording can be written
// to dir: it must not exist or be empty, so that a recording is never
// mixed into another and a typo is found before a 40 s run, not after.
func CheckDir(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("check %s: %w", dir, err)
	case len(entries) > 0:
		return fmt.Errorf("%s is not empty", dir)
	}
	return nil
}
