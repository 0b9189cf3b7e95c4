// Package fleet runs one runbook once per deployment of an inventory (the
// CLI's --all-deployments and --deployments), a bounded number at a time,
// records every run, and sums them up. The deployments come from
// bind.SelectDeployments, through Select, which also refuses what every
// deployment would.
package fleet

import (
	"context"
	"errors"
	"maps"
	"sync"

	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/bind"
	"github.com/runbot/runbot/runbooks/engine"
	"github.com/runbot/runbot/runbooks/record"
	"github.com/runbot/runbot/store"
)

// Result is one deployment's run in a fleet run.
type Result struct {
	Deployment string           `json:"deployment"`
	RunID      string           `json:"run_id,omitempty"`
	Outcome    runbooks.Outcome `json:"outcome,omitempty"`
	Diagnoses  []string         `json:"diagnoses"`
	VerdictMS  int64            `json:"verdict_ms,omitempty"`
	DurationMS int64            `json:"duration_ms,omitempty"`
	// Error says why the deployment could not be run (it lacks a role the
	// runbook targets, a host is unknown ...).
	Error  string           `json:"error,omitempty"`
	Report *runbooks.Report `json:"report,omitempty"`
}

// Doc is the document of a fleet run, as `runbot run --format json`
// prints it.
type Doc struct {
	Runbook    string   `json:"runbook"`
	Params     []string `json:"params,omitempty"`
	Parallel   int      `json:"parallel"`
	DurationMS int64    `json:"duration_ms"`
	Runs       []Result `json:"runs"`
}

// Options are what a fleet run shares across its deployments.
type Options struct {
	// Params are the runbook's params as given, without its deployment
	// param, which the fleet run sets per deployment.
	Params map[string]string
	// Parallel is how many deployments run at once.
	Parallel int
	// RequestedBy is who asked, recorded with every run.
	RequestedBy string
}

// Run runs rb once per member that can run it, at most opts.Parallel at a
// time, on eng, and records each run in st. A member that cannot run, and
// one whose run could not start or be recorded, has Error set; the others
// are run to the end. When ctx ends, the members not yet started are not
// started.
func Run(ctx context.Context, eng *engine.Engine, st store.Runs, rb *runbooks.Runbook, members []bind.FleetMember, opts Options) ([]Result, error) {
	dp := rb.DeploymentParam()
	if dp == nil {
		return nil, errors.New("runbook " + rb.Name + " has no deployment param: a fleet run sets one per deployment")
	}
	if opts.Parallel < 1 {
		opts.Parallel = 1
	}
	runs := make([]Result, len(members))
	sem := make(chan struct{}, opts.Parallel)
	var wg sync.WaitGroup
	for i, m := range members {
		runs[i] = Result{Deployment: m.Deployment, Diagnoses: []string{}}
		if m.Err != nil {
			runs[i].Error = m.Err.Error()
			continue
		}
		wg.Go(func() {
			select {
			case sem <- struct{}{}:
				defer func() { <-sem }()
			case <-ctx.Done():
			}
			// A slot and the end of ctx may both be ready: select picks
			// either, so the end is checked again.
			if ctx.Err() != nil {
				runs[i].Error = "not started: " + context.Cause(ctx).Error()
				return
			}
			params := map[string]string{dp.Name: m.Deployment}
			maps.Copy(params, opts.Params)
			params[dp.Name] = m.Deployment
			runs[i].run(ctx, eng, st, rb, params, opts.RequestedBy)
		})
	}
	wg.Wait()
	return runs, nil
}

// run prepares, runs and records one deployment's run into r.
func (r *Result) run(ctx context.Context, eng *engine.Engine, st store.Runs, rb *runbooks.Runbook, params map[string]string, requestedBy string) {
	p, err := eng.Prepare(ctx, rb, params)
	if err != nil {
		r.Error = err.Error()
		return
	}
	rep, err := record.RunAndRecord(ctx, eng, st, p, engine.RunOptions{Trigger: runbooks.TriggerCLI}, requestedBy)
	if err != nil {
		r.Error = err.Error()
		return
	}
	r.RunID, r.Outcome, r.Report = rep.RunID, rep.Outcome, rep
	r.VerdictMS = rep.VerdictAt.Sub(rep.StartedAt).Milliseconds()
	r.DurationMS = rep.FinishedAt.Sub(rep.StartedAt).Milliseconds()
	for _, d := range rep.Diagnoses {
		r.Diagnoses = append(r.Diagnoses, d.ID)
	}
}

// Worst is the worst outcome of the runs: critical when any was critical,
// else inconclusive when any was inconclusive or could not run, else ok.
func Worst(runs []Result) runbooks.Outcome {
	worst := runbooks.OutcomeOK
	for _, r := range runs {
		switch {
		case r.Outcome == runbooks.OutcomeCritical:
			return runbooks.OutcomeCritical
		case r.Error != "" || r.Outcome == runbooks.OutcomeInconclusive:
			worst = runbooks.OutcomeInconclusive
		}
	}
	return worst
}
