package runbooks

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/runbot/runbot/store"
)

// RunAndRecord runs p and keeps the run in st: the run is created before
// the first step starts, so a crash leaves a trace, and finished with its
// report and outcome.
func (e *Engine) RunAndRecord(ctx context.Context, st store.Runs, p *Prepared, opts RunOptions, requestedBy string) (*Report, error) {
	trigger := store.Trigger(opts.Trigger)
	if trigger == "" {
		trigger = store.TriggerCLI
	}
	run, err := st.CreateRun(ctx, store.Run{ID: opts.RunID, Runbook: p.Runbook.Name, Trigger: trigger, RequestedBy: requestedBy, Params: p.Text, StartedAt: e.now()})
	if err != nil {
		return nil, fmt.Errorf("record run: %w", err)
	}
	opts.RunID = run.ID
	rep := e.Run(ctx, p, opts)
	raw, err := json.Marshal(rep)
	if err != nil {
		return rep, fmt.Errorf("encode report: %w", err)
	}
	status := store.RunFinished
	if ctx.Err() != nil {
		status = store.RunCanceled
	}
	// The run is recorded even when the caller's context is gone.
	if _, err := st.FinishRun(context.WithoutCancel(ctx), run.ID, status, store.Outcome(rep.Outcome), raw); err != nil {
		return rep, fmt.Errorf("record run result: %w", err)
	}
	return rep, nil
}

// ReportOf decodes the report kept with a stored run.
func ReportOf(r store.Run) (*Report, error) {
	if len(r.Report) == 0 {
		return nil, fmt.Errorf("run %s has no report (status %s)", r.ID, r.Status)
	}
	var rep Report
	if err := json.Unmarshal(r.Report, &rep); err != nil {
		return nil, fmt.Errorf("decode report of run %s: %w", r.ID, err)
	}
	return &rep, nil
}
