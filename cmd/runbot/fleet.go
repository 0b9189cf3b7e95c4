package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/runbot/runbot/inventory"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/bind"
	"github.com/runbot/runbot/runbooks/engine"
	"github.com/runbot/runbot/runbooks/record"
	"github.com/runbot/runbot/store"
)

// fleetFlags select the deployments one `runbot run` covers.
type fleetFlags struct {
	all      bool
	matching string
	parallel int
}

func (f *fleetFlags) register(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.all, "all-deployments", false, "run once per inventory deployment that has the roles the runbook targets, and print one summary")
	cmd.Flags().StringVar(&f.matching, "deployments", "", "like --all-deployments, for the deployments whose names match this glob (e.g. 'dsv4-*')")
	cmd.Flags().IntVar(&f.parallel, "parallel", 4, "with --all-deployments or --deployments: how many deployments run at once")
}

func (f *fleetFlags) on() bool { return f.all || f.matching != "" }

// fleetRun is one deployment's run in a fleet run.
type fleetRun struct {
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

// fleetDoc is the JSON document of a fleet run.
type fleetDoc struct {
	Runbook    string     `json:"runbook"`
	Params     []string   `json:"params,omitempty"`
	Parallel   int        `json:"parallel"`
	DurationMS int64      `json:"duration_ms"`
	Runs       []fleetRun `json:"runs"`
}

// selectDeployments lists the inventory's deployments the flags select, by
// name, each with why the runbook cannot run on it, if it cannot.
func selectDeployments(rb *runbooks.Runbook, inv *inventory.Inventory, f *fleetFlags) ([]bind.FleetMember, error) {
	deps, err := bind.SelectDeployments(rb, inv, f.matching)
	var bad *bind.BadGlobError
	if errors.As(err, &bad) {
		return nil, fmt.Errorf("--deployments %q: %w", bad.Glob, bad.Err)
	}
	return deps, err
}

// runFleet runs rb once per selected deployment, at most f.parallel at a
// time, over one connection pool (one SSH connection per host for the
// whole fleet), records every run, and prints one summary.
func runFleet(cmd *cobra.Command, g *globalFlags, rf *runFlags, f *fleetFlags, name, format, requestedBy string) error {
	if f.parallel < 1 || f.parallel > 256 {
		return fmt.Errorf("--parallel %d: want 1 to 256", f.parallel)
	}
	rb, _, err := findRunbook(cmd, g, name)
	if err != nil {
		return err
	}
	dp := rb.DeploymentParam()
	if dp == nil {
		return fmt.Errorf("runbook %s has no deployment param: a fleet run sets one per deployment", rb.Name)
	}
	depParam := dp.Name
	given, err := rf.paramMap()
	if err != nil {
		return err
	}
	if _, ok := given[depParam]; ok {
		return fmt.Errorf("--param %s: a fleet run sets it per deployment; leave it out", depParam)
	}
	if err := hideInOutput(cmd, rb.SecretValues(given)...); err != nil {
		return err
	}
	if rf.inventory == "" {
		return fmt.Errorf("runbook %s needs an inventory: pass --inventory FILE", rb.Name)
	}
	inv, err := inventory.Load(rf.inventory)
	if err != nil {
		return err
	}
	deps, err := selectDeployments(rb, inv, f)
	if err != nil {
		return err
	}
	// Bad input shared by every deployment (an unknown or out-of-range
	// param) is refused before anything runs.
	probe := maps.Clone(given)
	probe[depParam] = deps[0].Deployment
	if _, _, err := rb.ResolveParams(probe); err != nil {
		return err
	}
	st, err := store.OpenLeased(cmd.Context(), g.store)
	if err != nil {
		return err
	}
	defer closeInto(&err, st)
	runners, closeRunners := newRunners(inv)
	defer closeRunners()
	eng := &engine.Engine{Targets: &bind.InventoryTargets{Inventory: inv, Runners: runners}}

	start := time.Now()
	runs := runDeployments(cmd.Context(), eng, st, rb, depParam, given, deps, f.parallel, requestedBy)
	doc := fleetDoc{Runbook: rb.Name, Params: rf.params, Parallel: f.parallel, DurationMS: time.Since(start).Milliseconds(), Runs: runs}
	if format == "json" {
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		if err := enc.Encode(doc); err != nil {
			return fmt.Errorf("write report: %w", err)
		}
	} else if err := printFleet(cmd.OutOrStdout(), doc); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	if code := fleetExit(runs); code != exitOK {
		return exitError{code}
	}
	return nil
}

func runDeployments(ctx context.Context, eng *engine.Engine, st store.Runs, rb *runbooks.Runbook, depParam string, given map[string]string, deps []bind.FleetMember, parallel int, requestedBy string) []fleetRun {
	runs := make([]fleetRun, len(deps))
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i, dep := range deps {
		runs[i] = fleetRun{Deployment: dep.Deployment, Diagnoses: []string{}}
		if dep.Err != nil {
			runs[i].Error = dep.Err.Error()
			continue
		}
		wg.Go(func() {
			select {
			case sem <- struct{}{}:
				defer func() { <-sem }()
			case <-ctx.Done():
				runs[i].Error = "not started: " + context.Cause(ctx).Error()
				return
			}
			params := maps.Clone(given)
			params[depParam] = dep.Deployment
			p, err := eng.Prepare(ctx, rb, params)
			if err != nil {
				runs[i].Error = err.Error()
				return
			}
			rep, err := record.RunAndRecord(ctx, eng, st, p, engine.RunOptions{Trigger: "cli"}, requestedBy)
			if err != nil {
				runs[i].Error = err.Error()
				return
			}
			r := &runs[i]
			r.RunID, r.Outcome, r.Report = rep.RunID, rep.Outcome, rep
			r.VerdictMS = rep.VerdictAt.Sub(rep.StartedAt).Milliseconds()
			r.DurationMS = rep.FinishedAt.Sub(rep.StartedAt).Milliseconds()
			for _, d := range rep.Diagnoses {
				r.Diagnoses = append(r.Diagnoses, d.ID)
			}
		})
	}
	wg.Wait()
	return runs
}

// fleetExit is the worst of the runs: 2 when any was critical, else 3 when
// any was inconclusive or could not run, else 0.
func fleetExit(runs []fleetRun) int {
	code := exitOK
	for _, r := range runs {
		switch {
		case r.Outcome == runbooks.OutcomeCritical:
			return exitCritical
		case r.Error != "" || r.Outcome == runbooks.OutcomeInconclusive:
			code = exitInconclusive
		}
	}
	return code
}

func printFleet(w io.Writer, doc fleetDoc) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	var errs []error
	p := func(format string, args ...any) {
		if _, err := fmt.Fprintf(tw, format, args...); err != nil {
			errs = append(errs, err)
		}
	}
	p("%s on %d deployments, %d at a time, in %s\n\n", doc.Runbook, len(doc.Runs), doc.Parallel, (time.Duration(doc.DurationMS) * time.Millisecond).String())
	p("DEPLOYMENT\tOUTCOME\tDIAGNOSES\tVERDICT\tTOOK\tRUN\n")
	for _, r := range doc.Runs {
		if r.Error != "" {
			p("%s\tnot run\t%s\t\t\t\n", r.Deployment, r.Error)
			continue
		}
		diag := strings.Join(r.Diagnoses, ", ")
		if diag == "" {
			diag = "-"
		}
		p("%s\t%s\t%s\t%s\t%s\t%s\n", r.Deployment, r.Outcome, diag, time.Duration(r.VerdictMS)*time.Millisecond, time.Duration(r.DurationMS)*time.Millisecond, r.RunID)
	}
	if err := tw.Flush(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
