// Package replay records what a run's checks observed and replays it: a
// Recording is the engine's tape while a run is live (runbot run --record),
// Replay runs a runbook again on a saved one with no host reached, and a
// runbook test file (TestFile, RunTest: runbot test) replays recordings
// and says what the runbook must conclude from each, as promtool test
// rules does for alerting rules. ExportReport turns a stored run's report
// into a recording of its results.
package replay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/engine"

	"go.yaml.in/yaml/v3"

	"github.com/runbot/runbot/checks"
	"github.com/runbot/runbot/internal/step"
	"github.com/runbot/runbot/internal/target"
	"github.com/runbot/runbot/remote"
)

// LoadRecording reads a recording directory written by Recording.Save (or
// by hand, in the same layout). Unknown fields are errors, with the file
// and line, so that a typo in a hand-made recording is not silently
// ignored.
func LoadRecording(dir string) (*Recording, error) {
	rec := &Recording{Dir: dir, runs: map[string]*observedDoc{}}
	if err := readYAML(filepath.Join(dir, recordingFile), &rec.doc); err != nil {
		return nil, err
	}
	if rec.doc.Format != RecordingFormat {
		return nil, fmt.Errorf("recording %s: format %d, want %d", dir, rec.doc.Format, RecordingFormat)
	}
	if rec.doc.Runbook == "" {
		return nil, fmt.Errorf("recording %s: %s names no runbook", dir, recordingFile)
	}
	matches, err := filepath.Glob(filepath.Join(dir, "*", "*", observedFile))
	if err != nil {
		return nil, fmt.Errorf("recording %s: %w", dir, err)
	}
	slices.Sort(matches)
	for _, path := range matches {
		od := &observedDoc{}
		if err := readYAML(path, od); err != nil {
			return nil, err
		}
		sub := filepath.Dir(path)
		key := filepath.ToSlash(filepath.Join(filepath.Base(filepath.Dir(sub)), filepath.Base(sub)))
		if od.Step == "" || od.Target == "" {
			return nil, fmt.Errorf("recording %s: step and target are required", path)
		}
		if od.Status == "" {
			od.Status = step.OK
		}
		for i := range od.Commands {
			c := &od.Commands[i]
			if c.stdout, err = readRaw(sub, c.Stdout); err != nil {
				return nil, err
			}
			if c.stderr, err = readRaw(sub, c.Stderr); err != nil {
				return nil, err
			}
		}
		for i := range od.Reads {
			rd := &od.Reads[i]
			if rd.data, err = readRaw(sub, rd.Data); err != nil {
				return nil, err
			}
		}
		for i := range od.Scrapes {
			s := &od.Scrapes[i]
			if s.body, err = readRaw(sub, s.Body); err != nil {
				return nil, err
			}
		}
		rec.runs[key] = od
		rec.order = append(rec.order, key)
	}
	return rec, nil
}

func readYAML(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read recording: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("read recording %s: %w", path, err)
	}
	return nil
}

func readRaw(dir, name string) ([]byte, error) {
	if name == "" {
		return nil, nil
	}
	if filepath.Base(name) != name {
		return nil, fmt.Errorf("read recording: %s: raw file %q must be a plain name beside observed.yaml", dir, name)
	}
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return nil, fmt.Errorf("read recording: %w", err)
	}
	return b, nil
}

// ReplayOptions tune a replay.
type ReplayOptions struct {
	// Params override the recorded params (e.g. a test's); nil replays
	// with the recorded ones.
	Params map[string]string
}

// Replay runs rb's steps against a recording instead of live targets: the
// checks run as they would, but every command, unit, probe, scrape and
// clock reading is answered from the recording, so nothing touches the
// network and the report depends on nothing but the recording and the
// runbook. A step or command the recording lacks is an error of that step
// (the finding that reads it is inconclusive), never a silent pass.
func Replay(ctx context.Context, rb *runbooks.Runbook, rec *Recording, opts ReplayOptions) (*runbooks.Report, error) {
	params := rec.Params()
	for k, v := range opts.Params {
		params[k] = v
	}
	finished := rec.doc.Finished
	e := &engine.Engine{
		Targets: replayTargets{rec: rec},
		Tape:    replayTape{rec: rec},
		// Only the engine's bookkeeping reads this clock; every time in
		// the report comes from the recording.
		Now: func() time.Time { return finished },
	}
	p, err := e.Prepare(ctx, rb, params)
	if err != nil {
		return nil, fmt.Errorf("replay %s: %w", rec.Dir, err)
	}
	return e.Run(ctx, p, engine.RunOptions{RunID: rec.doc.RunID, Trigger: rec.doc.Trigger}), nil
}

// replayTargets resolves targets to the ones the recording names.
type replayTargets struct{ rec *Recording }

func (rt replayTargets) Target(_ context.Context, ref engine.TargetRef) (target.Target, error) {
	for _, t := range rt.rec.doc.Targets {
		// A target written without a host (inline observations) is the
		// role on whichever host the params name.
		if t.Role != ref.Role || (ref.Host != "" && t.Host != "" && t.Host != ref.Host) {
			continue
		}
		if t.Host == "" {
			t.Host = ref.Host
		}
		tg := target.Target{
			Deployment: t.Deployment, Role: t.Role, Host: t.Host, Unit: t.Unit, URL: t.URL, MetricsURL: t.MetricsURL,
			LaunchScript: t.LaunchScript, LogFile: t.LogFile, Labels: t.Labels,
			Runner: offline{host: t.Host},
		}
		if t.ServiceManager != "" {
			tg.Services = offline{host: t.Host}
		}
		return tg, nil
	}
	return target.Target{}, fmt.Errorf("the recording has no target %s", ref.Role)
}

// offline stands for a recorded target's runner and service manager until
// a target run binds it to its recorded observations; it answers nothing.
type offline struct{ host string }

var errOffline = errors.New("replay: a recording reaches no host")

func (o offline) Run(context.Context, remote.Command) (remote.Output, error) {
	return remote.Output{}, errOffline
}
func (o offline) DialContext(context.Context, string, string) (net.Conn, error) {
	return nil, errOffline
}
func (o offline) Host() string { return o.host }
func (o offline) Show(context.Context, string) (remote.UnitState, error) {
	return remote.UnitState{}, errOffline
}
func (o offline) Restart(context.Context, string) error { return errOffline }
func (o offline) RestartCall(unit string) string        { return "restart " + unit + " (not in a replay)" }

// replayTape answers a run from a recording.
type replayTape struct{ rec *Recording }

func (rt replayTape) Target(stepID string, index int, t target.Target) engine.TargetTape {
	od := rt.rec.runs[runKey(stepID, t.Role)]
	if alt := rt.rec.runs[fmt.Sprintf("%s/%s-%d", stepID, t.Role, index+1)]; alt != nil {
		od = alt
	}
	if od == nil {
		return &missingRun{step: stepID, target: t.Name(), started: rt.rec.doc.Started}
	}
	return &replayRun{od: od, host: t.Host, used: map[int]bool{}}
}

func (rt replayTape) RunTime(m engine.RunMoment, live time.Time) time.Time {
	var v time.Time
	switch m {
	case engine.RunStarted:
		v = rt.rec.doc.Started
	case engine.RunFinished:
		v = rt.rec.doc.Finished
	case engine.RunVerdict:
		v = rt.rec.doc.VerdictAt
	}
	if v.IsZero() {
		return live
	}
	return v
}

// missingRun is a step the recording has nothing for: it replays as an
// error, so that what reads it is inconclusive.
type missingRun struct {
	step, target string
	started      time.Time
}

func (m *missingRun) Bind(t target.Target, now func() time.Time) (target.Target, func() time.Time, checks.Tape) {
	return t, now, nil
}

func (m *missingRun) Replayed(string) (engine.TapedOutcome, bool) {
	return engine.TapedOutcome{Status: step.Error, Error: fmt.Sprintf("replay: the recording has nothing for step %s on %s", m.step, m.target)}, true
}

func (m *missingRun) Finish(tr *runbooks.TargetRun) {
	tr.StartedAt, tr.Duration, tr.DurationMS = m.started, 0, 0
}

// replayRun answers one target run from its observed.yaml. Commands are
// matched by their line (each recorded command answers once; one without
// a line answers the next command, whatever it is), units by
// name, probes and scrapes in order, clock readings in order.
type replayRun struct {
	od   *observedDoc
	host string

	mu      sync.Mutex
	used    map[int]bool // commands answered
	read    map[int]bool // file reads answered
	units   map[int]bool
	probes  int
	scrapes int
	clock   int
}

func (rr *replayRun) Bind(t target.Target, _ func() time.Time) (target.Target, func() time.Time, checks.Tape) {
	t.Runner = replayRunner{run: rr}
	if t.Services != nil {
		t.Services = replayServices{run: rr}
	}
	return t, rr.now, replayNet{run: rr}
}

func (rr *replayRun) Replayed(check string) (engine.TapedOutcome, bool) {
	if rr.od.Status != step.OK {
		return engine.TapedOutcome{Status: rr.od.Status, Error: rr.od.Error}, true
	}
	if rr.od.Result == nil {
		return engine.TapedOutcome{}, false
	}
	res, err := rr.od.Result.result(check)
	if err != nil {
		return engine.TapedOutcome{Status: step.Error, Error: fmt.Sprintf("replay: %s: %v", rr.where(), err)}, true
	}
	return engine.TapedOutcome{Status: step.OK, Result: res}, true
}

func (rr *replayRun) Finish(tr *runbooks.TargetRun) {
	tr.StartedAt, tr.Duration, tr.DurationMS = rr.od.Started, rr.od.Duration, rr.od.Duration.Milliseconds()
}

// now returns the recorded clock readings in order; past the last one it
// keeps returning the last (or the step's start when none was recorded).
func (rr *replayRun) now() time.Time {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	if len(rr.od.Clock) == 0 {
		return rr.od.Started
	}
	i := min(rr.clock, len(rr.od.Clock)-1)
	rr.clock++
	return rr.od.Clock[i]
}

func (rr *replayRun) where() string {
	return fmt.Sprintf("step %s on %s", rr.od.Step, rr.od.Target)
}

type replayRunner struct{ run *replayRun }

func (r replayRunner) Run(_ context.Context, cmd remote.Command) (remote.Output, error) {
	rr := r.run
	rr.mu.Lock()
	defer rr.mu.Unlock()
	for i, c := range rr.od.Commands {
		// A command written without its line (in a test's inline
		// observations) answers whatever the check runs, in order.
		if rr.used[i] || (c.Line != cmd.Line && c.Line != "") {
			continue
		}
		rr.used[i] = true
		if c.Error != "" {
			return remote.Output{}, errors.New(c.Error)
		}
		out := remote.Output{
			ExitCode: c.Exit, Stdout: c.stdout, Stderr: c.stderr, Duration: c.Duration,
			StdoutTruncated: c.StdoutTruncated, StderrTruncated: c.StderrTruncated,
		}
		if cmd.MaxOutput > 0 {
			out.Stdout, out.StdoutTruncated = capOutput(out.Stdout, cmd.MaxOutput, out.StdoutTruncated)
			out.Stderr, out.StderrTruncated = capOutput(out.Stderr, cmd.MaxOutput, out.StderrTruncated)
		}
		return out, nil
	}
	var lines []string
	for _, c := range rr.od.Commands {
		lines = append(lines, c.Line)
	}
	return remote.Output{}, fmt.Errorf("replay: %s runs a command the recording does not have: %s (recorded: %s)",
		rr.where(), cmd.Line, orNone(strings.Join(lines, "; ")))
}

// ReadFile answers a file read from the recorded reads of that path, each
// once, in order. Without one it returns remote.ErrNoFileReader, so that
// the check runs the command a recording made without file reads holds.
func (r replayRunner) ReadFile(_ context.Context, path string, max int) (remote.File, error) {
	rr := r.run
	rr.mu.Lock()
	defer rr.mu.Unlock()
	for i, rd := range rr.od.Reads {
		if rr.read[i] || rd.Path != path {
			continue
		}
		if rr.read == nil {
			rr.read = map[int]bool{}
		}
		rr.read[i] = true
		switch {
		case rd.Problem != "":
			return remote.File{}, &remote.FileError{Host: rr.host, Path: path, Reason: rd.Problem}
		case rd.Error != "":
			return remote.File{}, errors.New(rd.Error)
		}
		f := remote.File{Data: rd.data, Truncated: rd.Truncated, ModTime: rd.ModTime}
		f.Data, f.Truncated = capOutput(f.Data, max, f.Truncated)
		return f, nil
	}
	return remote.File{}, remote.ErrNoFileReader
}

// capOutput applies a command's output cap to a recorded output, as the
// runner would have (a recording made with a larger cap keeps more).
func capOutput(b []byte, limit int, truncated bool) ([]byte, bool) {
	if len(b) <= limit {
		return b, truncated
	}
	return b[:limit], true
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func (r replayRunner) DialContext(context.Context, string, string) (net.Conn, error) {
	return nil, fmt.Errorf("replay: %s dials out, which a recording cannot answer", r.run.where())
}

func (r replayRunner) Host() string { return r.run.host }

type replayServices struct{ run *replayRun }

func (s replayServices) Show(_ context.Context, unit string) (remote.UnitState, error) {
	rr := s.run
	rr.mu.Lock()
	defer rr.mu.Unlock()
	if rr.units == nil {
		rr.units = map[int]bool{}
	}
	for i, u := range rr.od.Units {
		if rr.units[i] || u.Unit != unit {
			continue
		}
		rr.units[i] = true
		if u.Error != "" {
			return remote.UnitState{}, errors.New(u.Error)
		}
		return u.state(), nil
	}
	return remote.UnitState{}, fmt.Errorf("replay: %s shows unit %s, which the recording does not have", rr.where(), unit)
}

func (s replayServices) Restart(context.Context, string) error {
	return fmt.Errorf("replay: %s restarts a unit; a replay changes nothing", s.run.where())
}

func (s replayServices) RestartCall(unit string) string {
	return "restart " + unit + " (not in a replay)"
}

type replayNet struct{ run *replayRun }

func (n replayNet) Probe(_ context.Context, url string, _ func() checks.HTTPProbeOutput) (checks.HTTPProbeOutput, error) {
	rr := n.run
	rr.mu.Lock()
	defer rr.mu.Unlock()
	if rr.probes >= len(rr.od.Probes) {
		return checks.HTTPProbeOutput{}, fmt.Errorf("replay: %s sends probe %d, the recording has %d", rr.where(), rr.probes+1, len(rr.od.Probes))
	}
	p := rr.od.Probes[rr.probes]
	rr.probes++
	if p.URL != url {
		return checks.HTTPProbeOutput{}, fmt.Errorf("replay: %s probes %s, the recording probed %s", rr.where(), url, p.URL)
	}
	return p.output(), nil
}

func (n replayNet) Scrape(_ context.Context, url string, _ func() checks.Scrape) (checks.Scrape, error) {
	rr := n.run
	rr.mu.Lock()
	defer rr.mu.Unlock()
	if rr.scrapes >= len(rr.od.Scrapes) {
		return checks.Scrape{}, fmt.Errorf("replay: %s takes scrape %d, the recording has %d", rr.where(), rr.scrapes+1, len(rr.od.Scrapes))
	}
	s := rr.od.Scrapes[rr.scrapes]
	rr.scrapes++
	if s.URL != url {
		return checks.Scrape{}, fmt.Errorf("replay: %s scrapes %s, the recording scraped %s", rr.where(), url, s.URL)
	}
	return checks.Scrape{Time: s.Time, Err: s.Error, Body: s.body}, nil
}

// Sleep does not wait: the time a check waited for is in the recording's
// clock readings.
func (n replayNet) Sleep(ctx context.Context, _ time.Duration) error { return ctx.Err() }
