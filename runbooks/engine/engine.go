// Package engine runs a prepared runbook: every step as soon as the steps
// it needs are done, every target of a step concurrently, each under its
// own timeout, over the runners its Targets give; findings and diagnoses
// are settled as soon as the steps so far decide them. It streams progress
// events and can be fed taped observations instead of live ones (replay).
package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/runbot/runbot/checks"
	"github.com/runbot/runbot/internal/step"
	"github.com/runbot/runbot/internal/target"
	"github.com/runbot/runbot/remote/sshrun"
	"github.com/runbot/runbot/runbooks"
)

// Engine runs runbooks.
type Engine struct {
	Targets Targets
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Parallel bounds how many targets of one step run at once; 16 when 0.
	Parallel int
	// Grace is how long the engine waits for a check that ignores its
	// expired context before it gives up on it; 2s when 0.
	Grace time.Duration
	// Observer, when set, is told about every step and run.
	Observer Observer
	// Tape, when set, records what the checks observe or replays a
	// recording in place of the targets (see Tape).
	Tape Tape
}

// RunOptions tune one run.
type RunOptions struct {
	RunID string
	// Trigger says what started the run; the report carries it.
	Trigger runbooks.Trigger
	// Progress, when set, is told as steps start and finish. It is called
	// from several goroutines and must be quick.
	Progress func(Event)
	// Only restricts the run to these steps (and what they need), e.g. to
	// re-run the failing probes after a remediation.
	Only []string
}

// Event is a progress notification.
type Event struct {
	Kind EventKind
	At   time.Time
	Run  *runbooks.TargetRun
	// Verdict holds, for a "verdict" event, the diagnoses that the steps
	// finished so far already decide: the complete report will hold the
	// same, while the remaining steps add evidence.
	Verdict []runbooks.DiagnosisResult
}

// EventKind says what an Event reports.
type EventKind string

const (
	// EventStepStarted: a step started on one target (Run).
	EventStepStarted EventKind = "step_started"
	// EventStepFinished: a step finished on one target (Run).
	EventStepFinished EventKind = "step_finished"
	// EventVerdict: the diagnoses are settled (Verdict), before the
	// slowest steps are done.
	EventVerdict EventKind = "verdict"
)

// StepTimeoutError is the cause of a step's context when its own timeout
// expired, as opposed to the whole run being cancelled.
type StepTimeoutError struct {
	Step    string
	Target  string
	Timeout time.Duration
}

func (e *StepTimeoutError) Error() string {
	return fmt.Sprintf("step %s on %s timed out after %s", e.Step, e.Target, e.Timeout)
}

// Time is the engine's clock: Now, or time.Now when Now is nil.
func (e *Engine) Time() time.Time { return e.now() }

func (e *Engine) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

// NewRunID returns a sortable, unique run id such as r-20261129-083012-3f9a.
func NewRunID(now time.Time) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return "r-" + now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// Prepared is a runbook bound to validated params and resolved targets:
// everything that can be wrong with a request is found before anything runs.
type Prepared struct {
	Runbook *runbooks.Runbook
	Params  map[string]any
	Text    map[string]string
	targets map[string][]target.Target // by step id
}

// Prepare validates params and resolves every step's targets.
func (e *Engine) Prepare(ctx context.Context, rb *runbooks.Runbook, given map[string]string) (*Prepared, error) {
	typed, text, err := rb.ResolveParams(given)
	if err != nil {
		return nil, err
	}
	p := &Prepared{Runbook: rb, Params: typed, Text: text, targets: map[string][]target.Target{}}
	for _, s := range rb.Steps {
		ts, err := e.Resolve(ctx, rb, s.Targets, typed)
		if err != nil {
			return nil, fmt.Errorf("step %s: %w", s.ID, err)
		}
		p.targets[s.ID] = ts
	}
	return p, nil
}

// Resolve binds the named step or action targets of rb, under params, to
// live targets through e.Targets.
func (e *Engine) Resolve(ctx context.Context, rb *runbooks.Runbook, names []string, params map[string]any) ([]target.Target, error) {
	refs := RefsFor(rb, names, params)
	out := make([]target.Target, len(refs))
	for i, ref := range refs {
		t, err := e.Targets.Target(ctx, ref)
		if err != nil {
			return nil, err
		}
		out[i] = t
	}
	return out, nil
}

// Run runs a prepared runbook: every step as soon as the steps it needs are
// done, every target of a step concurrently, and then its findings and
// diagnoses. It returns an error only when the run could not start.
func (e *Engine) Run(ctx context.Context, p *Prepared, opts RunOptions) *runbooks.Report {
	rb := p.Runbook
	start := e.runTime(RunStarted, e.now())
	if opts.RunID == "" {
		opts.RunID = NewRunID(start)
	}
	// Progress is told what may be shown; the report returned holds what
	// the checks saw, for the expressions evaluated on it after the run
	// (preconditions, verification): its shown form is Prepared.Shown.
	opts.Progress = p.showing(opts.Progress)
	rep := &runbooks.Report{RunID: opts.RunID, Runbook: rb.Name, Title: rb.Title, Trigger: opts.Trigger, Params: p.Text, StartedAt: start}
	selected := closure(rb, opts.Only)
	var shells *runShells
	if rb.SSH.SharedSession {
		shells = newRunShells()
		defer shells.close()
	}

	type stepState struct {
		done chan struct{}
		runs []*runbooks.TargetRun
	}
	states := map[string]*stepState{}
	for _, s := range rb.Steps {
		states[s.ID] = &stepState{done: make(chan struct{})}
	}
	// finished and verdictAt are guarded by mu: steps finish concurrently,
	// and after each the engine checks whether the verdict is settled.
	var mu sync.Mutex
	finished := map[string]bool{}
	var verdictAt time.Time
	stepDone := func(id string) {
		mu.Lock()
		defer mu.Unlock()
		finished[id] = true
		// A runbook without diagnoses has no verdict to settle early: its
		// findings are the result, and they arrive with their steps.
		if !verdictAt.IsZero() || len(rb.Diagnoses) == 0 {
			return
		}
		partial := *rep
		partial.Steps = nil
		for _, s := range rb.Steps {
			if finished[s.ID] {
				partial.Steps = append(partial.Steps, states[s.ID].runs...)
			}
		}
		now := e.now()
		if ds, ok := rb.Settle(&partial, finished, p.Params, now); ok {
			verdictAt = now
			if opts.Progress != nil {
				opts.Progress(Event{Kind: EventVerdict, At: now, Verdict: ds})
			}
		}
	}
	var wg sync.WaitGroup
	for _, s := range rb.Steps {
		if !selected[s.ID] {
			close(states[s.ID].done)
			mu.Lock()
			finished[s.ID] = true
			mu.Unlock()
			continue
		}
		wg.Go(func() {
			st := states[s.ID]
			defer close(st.done)
			var observed []step.Event
			var blocked string
			for _, n := range s.Needs {
				// A cancelled run still waits here: every step returns
				// promptly once its context is done, and its runs are
				// only safe to read after it has.
				ns := states[n]
				<-ns.done
				for _, r := range ns.runs {
					observed = append(observed, r.Events...)
					if !r.Status.Ran() && blocked == "" {
						blocked = fmt.Sprintf("needs %s, which did not run on %s (%s)", n, r.Target, r.Status)
					}
				}
				if !selected[n] && blocked == "" {
					blocked = fmt.Sprintf("needs %s, which was not part of this run", n)
				}
			}
			st.runs = e.runStep(ctx, p, s, observed, blocked, start, opts, shells)
			stepDone(s.ID)
		})
	}
	wg.Wait()
	for _, s := range rb.Steps {
		rep.Steps = append(rep.Steps, states[s.ID].runs...)
	}
	rep.FinishedAt = e.runTime(RunFinished, e.now())
	rb.Evaluate(rep, p.Params, rep.FinishedAt)
	rep.VerdictAt = verdictAt
	if verdictAt.IsZero() {
		rep.VerdictAt = rep.FinishedAt
	}
	rep.VerdictAt = e.runTime(RunVerdict, rep.VerdictAt)
	if e.Observer != nil {
		e.Observer.RunFinished(rep)
	}
	return rep
}

// closure returns the selected steps of rb plus everything they need.
func closure(rb *runbooks.Runbook, only []string) map[string]bool {
	sel := map[string]bool{}
	if len(only) == 0 {
		for _, s := range rb.Steps {
			sel[s.ID] = true
		}
		return sel
	}
	var add func(id string)
	add = func(id string) {
		if sel[id] {
			return
		}
		sel[id] = true
		if s := rb.StepByID(id); s != nil {
			for _, n := range s.Needs {
				add(n)
			}
		}
	}
	for _, id := range only {
		add(id)
	}
	return sel
}

func (e *Engine) runStep(ctx context.Context, p *Prepared, s *runbooks.Step, observed []step.Event, blocked string, runStart time.Time, opts RunOptions, shells *runShells) []*runbooks.TargetRun {
	targets := p.targets[s.ID]
	runs := make([]*runbooks.TargetRun, len(targets))
	parallel := e.Parallel
	if parallel <= 0 {
		parallel = 16
	}
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i, t := range targets {
		tr := &runbooks.TargetRun{Step: s.ID, Check: s.Check, Target: t.Role, Host: t.Host}
		runs[i] = tr
		if blocked != "" {
			tr.Status, tr.Error, tr.StartedAt = step.Skipped, blocked, e.now()
			e.emit(opts, EventStepFinished, tr)
			continue
		}
		wg.Go(func() {
			select {
			case sem <- struct{}{}:
				defer func() { <-sem }()
			case <-ctx.Done():
				tr.Status, tr.Error, tr.StartedAt = step.Canceled, "run cancelled before the step started", e.now()
				e.emit(opts, EventStepFinished, tr)
				return
			}
			if shells != nil {
				t = shells.share(t)
			}
			e.runTarget(ctx, p, s, i, t, tr, observed, runStart, opts)
		})
	}
	wg.Wait()
	return runs
}

func (e *Engine) runTarget(ctx context.Context, p *Prepared, s *runbooks.Step, index int, t target.Target, tr *runbooks.TargetRun, observed []step.Event, runStart time.Time, opts RunOptions) {
	ct := s.CheckType
	var tape TargetTape
	if e.Tape != nil {
		tape = e.Tape.Target(s.ID, index, t)
	}
	tr.StartedAt = e.now()
	e.emit(opts, EventStepStarted, tr)
	defer func() {
		tr.Duration = e.now().Sub(tr.StartedAt)
		tr.DurationMS = tr.Duration.Milliseconds()
		if tape != nil {
			tape.Finish(tr)
		}
		e.emit(opts, EventStepFinished, tr)
		if e.Observer != nil {
			e.Observer.StepFinished(p.Runbook.Name, tr)
		}
	}()
	if tape != nil {
		if out, ok := tape.Replayed(s.Check); ok {
			tr.Status, tr.Error = out.Status, out.Error
			if out.Result != nil {
				tr.Values, tr.Evidence, tr.Events = out.Result.Values, out.Result.Evidence, out.Result.Events
			}
			return
		}
	}
	args, err := RenderArgs(ct.Spec, s.With, runbooks.ArgData(p.Params, t, opts.RunID, runStart))
	if err != nil {
		tr.Status, tr.Error = step.Error, err.Error()
		return
	}
	cause := &StepTimeoutError{Step: s.ID, Target: t.Name(), Timeout: s.Timeout}
	sctx, cancel := context.WithTimeoutCause(ctx, s.Timeout, cause)
	defer cancel()
	env := checks.Env{Target: t, Args: args, Now: e.now, RunStarted: runStart, Observed: observed}
	if tape != nil {
		env.Target, env.Now, env.Tape = tape.Bind(t, e.now)
	}

	type outcome struct {
		res step.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- outcome{err: fmt.Errorf("check %s panicked: %v\n%s", s.Check, r, debug.Stack())}
			}
		}()
		res, err := ct.Check.Run(sctx, env)
		done <- outcome{res, err}
	}()
	var out outcome
	select {
	case out = <-done:
	case <-sctx.Done():
		// Give a well-behaved check a moment to return what it saw before
		// the deadline; a check that ignores its context is abandoned.
		grace := e.Grace
		if grace <= 0 {
			grace = 2 * time.Second
		}
		select {
		case out = <-done:
		case <-time.After(grace):
			out = outcome{err: context.Cause(sctx)}
		}
	}
	tr.Values, tr.Evidence, tr.Events = out.res.Values, out.res.Evidence, out.res.Events
	switch {
	case out.err == nil:
		tr.Status = step.OK
	case ctx.Err() != nil:
		tr.Status, tr.Error = step.Canceled, "run cancelled: "+out.err.Error()
		tr.ConnectError = connectError(tr, out.err)
	case errors.Is(context.Cause(sctx), cause) && sctx.Err() != nil:
		tr.Status, tr.Error = step.Timeout, cause.Error()
	default:
		tr.Status, tr.Error = step.Error, out.err.Error()
		tr.ConnectError = connectError(tr, out.err)
	}
}

// connectError is the text of the SSH connect error in err when it is
// about the host tr ran on (its target, when the host is not known), else
// "": the host could not be reached or would not let runbot in. A connect
// error of another host is the step's own failure, not its host's.
func connectError(tr *runbooks.TargetRun, err error) string {
	var ce *sshrun.ConnectError
	if !errors.As(err, &ce) {
		return ""
	}
	host := tr.Host
	if host == "" {
		host = tr.Target
	}
	if host == "" || ce.Host != host {
		return ""
	}
	return ce.Error()
}

// runTime passes a run's start, end or verdict time through the tape.
func (e *Engine) runTime(m RunMoment, live time.Time) time.Time {
	if e.Tape == nil {
		return live
	}
	return e.Tape.RunTime(m, live)
}

func (e *Engine) emit(opts RunOptions, kind EventKind, tr *runbooks.TargetRun) {
	if opts.Progress == nil {
		return
	}
	cp := *tr
	// The report writes the ages its evidence marks as of the run's end;
	// a step's progress is shown as it finishes, so as of then.
	at := e.now()
	cp.Evidence = step.AgesOf(tr.Evidence, at)
	opts.Progress(Event{Kind: kind, At: at, Run: &cp})
}

// Deployment names what a remediation locks: the deployment param's value,
// or else the first host param's.
func (p *Prepared) Deployment() string {
	if dp := p.Runbook.DeploymentParam(); dp != nil {
		return p.Text[dp.Name]
	}
	for _, prm := range p.Runbook.Params {
		if prm.Type == runbooks.ParamHost {
			return "host/" + p.Text[prm.Name]
		}
	}
	return p.Runbook.Name
}
