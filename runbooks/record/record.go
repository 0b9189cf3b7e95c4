// Package record is the one path from a request to a stored run: it
// prepares and creates the run, runs it, stores its end (also when the
// store failed for a while) and proposes its remediation; ReportOf reads
// the report a stored run keeps.
package record

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/engine"
	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/store"
)

// WriteTimeout bounds one store write that records how a run ended. Each
// such write gets its own deadline, started right before it and detached
// from the run's context (WriteContext): it happens even when the
// run's own deadline has passed, however long the run took.
const WriteTimeout = 30 * time.Second

// WriteContext returns a context for one write that records a run's
// end, bounded by WriteTimeout from now and detached from ctx's
// cancellation; the cause names what took too long.
func WriteContext(ctx context.Context, what string) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(context.WithoutCancel(ctx), WriteTimeout,
		fmt.Errorf("%s took longer than %s", what, WriteTimeout))
}

// Record is one run to carry out and keep in the store, from any trigger:
// the CLI, a chat command, an alert or a schedule. Record is the one path
// that prepares, creates the run, runs it, stores its report, finishes it
// (cancelled or done) and proposes its remediation; the hooks are what
// differs between triggers.
type Record struct {
	// ID is the run's id (NewRunID); the store picks one when empty.
	ID string
	// Runbook is the name the run is recorded under. Prepared, when set,
	// is run as is; otherwise Book is prepared with Params. When Book is
	// nil, NotFound says why (the runbook is not in the catalog) and the
	// run is recorded as one that could not start.
	Runbook  string
	Book     *runbooks.Runbook
	NotFound error
	Params   map[string]string
	Prepared *engine.Prepared

	Trigger     store.Trigger
	RequestedBy string
	// WorkID is the queued work the run carries out, if any.
	WorkID string
	// StartedAt is recorded as the run's start; the store's clock when
	// zero.
	StartedAt time.Time

	// Created, when set, is told of the run once it is in the store,
	// before it starts (also when it cannot start): post its message here.
	Created func(ctx context.Context, run store.Run)
	// Progress and Only are RunOptions'.
	Progress func(engine.Event)
	Only     []string
	// Propose, when set, is asked after the run was recorded (so far is
	// what became of it) whether to propose the remediation its diagnosis
	// asks for; nil means yes. No remediation is proposed without a
	// Remediator, nor for a run whose context ended.
	Propose func(ctx context.Context, soFar Recorded) bool
}

// Recorded says what became of a Record.
type Recorded struct {
	// Run is the run as the store last returned it: finished, or as
	// created when recording its end failed. Its ID is empty when the run
	// could not even be created (Err says why).
	Run      store.Run
	Prepared *engine.Prepared
	// Report is nil when the run could not start; StartErr says why (an
	// unknown runbook, a bad param, an unresolvable target).
	Report   *runbooks.Report
	StartErr error
	// Proposal is the remediation proposed, if any; ProposeErr why
	// proposing failed. Proposed says whether proposing was attempted.
	Proposed   bool
	Proposal   *remediation.Proposal
	ProposeErr error
	// Err is a failure to record: creating the run, encoding its report
	// or recording its end.
	Err error
	// Unrecorded is the end of a run the store did not take (it was full,
	// read-only or down): the caller keeps it and records it later
	// (WriteEnd), so that a run that ended is never left running, and
	// never run again after a restart because of it.
	Unrecorded *End
}

// End is how a run ended, as the store records it.
type End struct {
	RunID   string
	Status  store.RunStatus
	Outcome store.Outcome
	Report  json.RawMessage
}

// WriteEnd records e in runs, under a WriteTimeout deadline.
func WriteEnd(ctx context.Context, runs store.Runs, e End) (store.Run, error) {
	rctx, cancel := WriteContext(ctx, "recording the end of run "+e.RunID)
	defer cancel()
	return runs.FinishRun(rctx, e.RunID, e.Status, e.Outcome, e.Report)
}

// Recorder carries out Records: Engine runs them, Runs keeps them, and
// Remediator, when set, proposes what their diagnoses ask for.
type Recorder struct {
	Engine     *engine.Engine
	Runs       store.Runs
	Remediator *remediation.Remediator
}

// Record carries out one run and keeps it: the run is created before the
// first step starts, so a crash leaves a trace, and finished with its
// report and outcome, under a deadline that starts when the run ended.
func (r *Recorder) Record(ctx context.Context, rec Record) Recorded {
	var out Recorded
	p := rec.Prepared
	if p == nil {
		switch {
		case rec.Book == nil && rec.NotFound != nil:
			out.StartErr = rec.NotFound
		case rec.Book == nil:
			out.StartErr = fmt.Errorf("unknown runbook %q", rec.Runbook)
		default:
			p, out.StartErr = r.Engine.Prepare(ctx, rec.Book, rec.Params)
		}
	}
	out.Prepared = p
	// The run keeps its params with every secret one masked: the raw
	// values stay with the queued work and the plan, which act on them.
	name, params := rec.Runbook, rec.Params
	switch {
	case p != nil:
		params = p.Runbook.MaskSecrets(p.Text)
		if name == "" {
			name = p.Runbook.Name
		}
	case rec.Book != nil:
		params = rec.Book.MaskSecrets(params)
	}
	run, err := r.Runs.CreateRun(ctx, store.Run{
		ID: rec.ID, Runbook: name, Trigger: rec.Trigger, RequestedBy: rec.RequestedBy, Params: params, WorkID: rec.WorkID, StartedAt: rec.StartedAt,
	})
	if err != nil {
		out.Err = fmt.Errorf("record run: %w", err)
		return out
	}
	out.Run = run
	if rec.Created != nil {
		rec.Created(ctx, run)
	}
	if out.StartErr != nil {
		rctx, cancel := WriteContext(ctx, "recording the end of run "+run.ID)
		defer cancel()
		if fin, err := r.Runs.FinishRun(rctx, run.ID, store.RunFailed, store.OutcomeError, nil); err != nil {
			out.Err = fmt.Errorf("record run end: %w", err)
		} else {
			out.Run = fin
		}
		return out
	}

	seen := r.Engine.Run(ctx, p, engine.RunOptions{RunID: run.ID, Trigger: rec.Trigger, Progress: rec.Progress, Only: rec.Only})
	rep := p.Shown(seen)
	out.Report = rep
	status := store.RunFinished
	if ctx.Err() != nil {
		status = store.RunCanceled
	}
	raw, err := json.Marshal(rep)
	if err != nil {
		out.Err = fmt.Errorf("encode report: %w", err)
		raw = nil
	}
	// The deadline starts now, not with the run: a run may take longer
	// than recording its end may.
	end := End{RunID: run.ID, Status: status, Outcome: rep.Outcome, Report: raw}
	fin, ferr := WriteEnd(ctx, r.Runs, end)
	if ferr != nil {
		if out.Err == nil {
			out.Err = fmt.Errorf("record run result: %w", ferr)
		}
		out.Unrecorded = &end
	} else {
		out.Run = fin
	}

	if r.Remediator == nil || ctx.Err() != nil || (rec.Propose != nil && !rec.Propose(ctx, out)) {
		return out
	}
	out.Proposed = true
	out.Proposal, out.ProposeErr = r.Remediator.Propose(ctx, p, seen, rec.RequestedBy)
	return out
}

// RunAndRecord runs p on e and keeps the run in st (Recorder.Record,
// without proposing): the run is created before the first step starts, so
// a crash leaves a trace, and finished with its report and outcome.
func RunAndRecord(ctx context.Context, e *engine.Engine, st store.Runs, p *engine.Prepared, opts engine.RunOptions, requestedBy string) (*runbooks.Report, error) {
	trigger := opts.Trigger
	if trigger == "" {
		trigger = store.TriggerCLI
	}
	r := &Recorder{Engine: e, Runs: st}
	out := r.Record(ctx, Record{
		ID: opts.RunID, Prepared: p, Trigger: trigger, RequestedBy: requestedBy, StartedAt: e.Time(), Progress: opts.Progress, Only: opts.Only,
	})
	if out.Run.ID == "" {
		return nil, out.Err
	}
	return out.Report, out.Err
}

// ReportOf decodes the report kept with a stored run.
func ReportOf(r store.Run) (*runbooks.Report, error) {
	if len(r.Report) == 0 {
		return nil, fmt.Errorf("run %s has no report (status %s)", r.ID, r.Status)
	}
	var rep runbooks.Report
	if err := json.Unmarshal(r.Report, &rep); err != nil {
		return nil, fmt.Errorf("decode report of run %s: %w", r.ID, err)
	}
	return &rep, nil
}
