package schedule

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/runbot/runbot/dispatch"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/record"
	"github.com/runbot/runbot/store"
)

// deploymentResult is what became of one deployment in one firing of a
// fleet audit, next to its previous run of the same schedule.
type deploymentResult struct {
	Deployment string
	RunID      string
	Outcome    store.Outcome
	// Signature is the outcome with the diagnoses found ("error" for a
	// run that could not start), which on_change compares with Prev.
	Signature string
	// Why says why the deployment could not be run; Err is set when even
	// recording its run failed.
	Why string
	Err error
	// Remediations are the remediations its diagnoses name.
	Remediations []string
	// run, params and report are the recorded run, the params it was
	// given (the run keeps its secret ones masked) and its report, for
	// proposing its remediation once the firing's message is posted.
	run    store.Run
	params map[string]string
	report *runbooks.Report

	HasPrev   bool
	Prev      string
	PrevRunID string
	// PrevErr is set when the previous run could not be read: the
	// deployment then counts as changed, since a message too many is
	// better than a change nobody hears of.
	PrevErr error
}

// changed says whether the deployment's result differs from its previous
// run of the schedule, or it has none.
func (r deploymentResult) changed() bool {
	return r.PrevErr != nil || !r.HasPrev || r.Signature != r.Prev
}

func (r deploymentResult) bad() bool { return r.Outcome != store.OutcomeOK }

// compileFleet checks a fleet schedule against the runbook and the
// inventory, and returns the deployments its firings run on and the param
// set to each. A selection that runs on nothing is an error, not a
// warning: such a schedule would stay silent for ever, and silence from an
// on_change audit reads as "all is well".
func (s *Scheduler) compileFleet(rb *runbooks.Runbook, sc *Schedule) ([]string, string, error) {
	switch {
	case sc.Parallel == 0:
		sc.Parallel = DefaultParallel
	case sc.Parallel < 0:
		return nil, "", fmt.Errorf("parallel %d: want at least 1", sc.Parallel)
	}
	dp := rb.DeploymentParam()
	if dp == nil {
		return nil, "", fmt.Errorf("deployments %q: runbook %s has no deployment param to set per deployment", sc.Deployments, rb.Name)
	}
	if _, ok := sc.Params[dp.Name]; ok {
		return nil, "", fmt.Errorf("deployments %q and param %s are both set: a fleet audit sets %s per deployment; keep one", sc.Deployments, dp.Name, dp.Name)
	}
	if s.fleet == nil {
		return nil, "", fmt.Errorf("deployments %q: the scheduler has no inventory to pick them from", sc.Deployments)
	}
	glob := sc.Deployments
	if glob == "all" {
		glob = ""
	}
	members, err := s.fleet.Select(rb, glob)
	if err != nil {
		return nil, "", fmt.Errorf("deployments %q: %w", sc.Deployments, err)
	}
	var fleet []string
	var lacking []string
	for _, m := range members {
		if m.Err != nil {
			// A deployment without the runbook's roles is not part of its
			// fleet: reporting it on every firing would be noise.
			lacking = append(lacking, m.Err.Error())
			continue
		}
		fleet = append(fleet, m.Deployment)
	}
	if len(fleet) == 0 {
		return nil, "", fmt.Errorf("deployments %q: no deployment can run runbook %s: %s", sc.Deployments, rb.Name, strings.Join(lacking, "; "))
	}
	if len(lacking) > 0 {
		s.log.Info("fleet audit leaves out deployments without the runbook's roles", "runbook", rb.Name, "deployments", sc.Deployments, "left_out", lacking)
	}
	// Bad params shared by every deployment are refused now, not at the
	// first firing.
	probe := maps.Clone(sc.Params)
	if probe == nil {
		probe = map[string]string{}
	}
	probe[dp.Name] = fleet[0]
	if _, _, err := rb.ResolveParams(probe); err != nil {
		return nil, "", err
	}
	return fleet, dp.Name, nil
}

// auditTimeout bounds one firing: one run's timeout for a single audit,
// and one per wave of a fleet audit, since its runs wait for each other's
// places.
func (s *Scheduler) auditTimeout(e *scheduled) time.Duration {
	if len(e.fleet) == 0 {
		return s.disp.RunTimeout()
	}
	waves := (len(e.fleet) + e.Parallel - 1) / e.Parallel
	return time.Duration(waves) * s.disp.RunTimeout()
}

// runFleet runs one firing of a fleet audit: the runbook once per
// deployment, at most e.Parallel at a time, each recorded as its own run
// (trigger schedule, requested by the schedule's name) and none posted on
// its own; then one message, when the schedule's policy finds something to
// say (fleetMessage).
func (s *Scheduler) runFleet(ctx context.Context, e *scheduled) auditResult {
	results := make([]deploymentResult, len(e.fleet))
	sem := make(chan struct{}, e.Parallel)
	var wg sync.WaitGroup
	for i, dep := range e.fleet {
		wg.Go(func() {
			results[i] = deploymentResult{Deployment: dep}
			select {
			case sem <- struct{}{}:
				defer func() { <-sem }()
			case <-ctx.Done():
				results[i].Outcome, results[i].Signature = store.OutcomeError, string(store.OutcomeError)
				results[i].Err = fmt.Errorf("not started: %w", context.Cause(ctx))
				return
			}
			defer func() {
				// One deployment's panic must not take the others, or the
				// process, with it.
				if r := recover(); r != nil {
					s.log.Error("fleet audit of a deployment panicked", "schedule", e.Name, "deployment", dep, "panic", r, "stack", string(debug.Stack()))
					results[i].Outcome, results[i].Signature = store.OutcomeError, string(store.OutcomeError)
					results[i].Err = fmt.Errorf("panicked: %v", r)
				}
			}()
			results[i] = s.auditDeployment(ctx, e, dep)
		})
	}
	wg.Wait()
	return s.postFleet(ctx, e, results)
}

// auditDeployment runs and records one deployment's run of a fleet audit,
// without posting it or proposing its remediation (the firing's one
// message names it, and the plan goes in that message's thread), and reads
// its previous run.
func (s *Scheduler) auditDeployment(ctx context.Context, e *scheduled, dep string) deploymentResult {
	params := maps.Clone(e.Params)
	if params == nil {
		params = map[string]string{}
	}
	params[e.depParam] = dep
	out := s.disp.RunNow(ctx, dispatch.Direct{
		Runbook: e.Runbook, Params: params, Source: store.TriggerSchedule, RequestedBy: e.Name, Channel: e.Channel,
		Post: func(context.Context, store.Run, *runbooks.Report) (bool, string) { return false, "" },
	})
	r := deploymentResult{Deployment: dep, RunID: out.Run.ID, Outcome: out.Run.Outcome, Err: out.Err, run: out.Run, params: params, report: out.Report}
	if r.Outcome == store.OutcomeNone && r.Err != nil {
		r.Outcome = store.OutcomeError
	}
	r.Signature = signature(r.Outcome, out.Report)
	if out.Report != nil {
		for _, dg := range out.Report.Diagnoses {
			if dg.Remediation != "" {
				r.Remediations = append(r.Remediations, dg.Remediation)
			}
		}
	}
	if out.Report == nil && out.Err == nil {
		// The run could not start; RunNow recorded it but says why only
		// in a message it posts, so ask the same question it asked.
		if err := s.disp.Check(ctx, e.Runbook, params); err != nil {
			r.Why = err.Error()
		} else {
			r.Why = "the run could not start"
		}
	}
	rctx, cancel := record.WriteContext(ctx, "reading the previous run of schedule "+e.Name+" on "+dep)
	defer cancel()
	r.PrevRunID, r.Prev, r.HasPrev, r.PrevErr = s.previousOf(rctx, e, dep, out.Run)
	if r.PrevErr != nil {
		s.log.Warn("previous run of a fleet deployment not read; it counts as changed", "schedule", e.Name, "deployment", dep, "err", r.PrevErr)
	}
	return r
}

// previousOf finds the schedule's run on dep before run: filtered by the
// deployment param, not only by runbook and trigger, since the other
// deployments of the same firing are recorded at the same time.
func (s *Scheduler) previousOf(ctx context.Context, e *scheduled, dep string, run store.Run) (id, sig string, ok bool, err error) {
	if s.store == nil {
		return "", "", false, errors.New("scheduler has no store")
	}
	runs, err := s.store.ListRuns(ctx, store.RunFilter{
		Runbook: e.Runbook, Trigger: store.TriggerSchedule, RequestedBy: e.Name,
		Params: map[string]string{e.depParam: dep}, Limit: 20,
	})
	if err != nil {
		return "", "", false, err
	}
	for _, r := range runs {
		if r.ID == run.ID || !r.Status.Final() || (run.ID != "" && r.StartedAt.After(run.StartedAt)) {
			continue
		}
		var rep *runbooks.Report
		if len(r.Report) > 0 {
			if rep, err = record.ReportOf(r); err != nil {
				return "", "", false, err
			}
		}
		return r.ID, signature(r.Outcome, rep), true, nil
	}
	return "", "", false, nil
}
