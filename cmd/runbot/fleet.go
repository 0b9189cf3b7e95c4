package main

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/runbot/runbot/console"
	"github.com/runbot/runbot/inventory"
	"github.com/runbot/runbot/runbooks/bind"
	"github.com/runbot/runbot/runbooks/fleet"
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

// runFleet runs rb once per selected deployment, at most f.parallel at a
// time, over one connection pool (one SSH connection per host for the
// whole fleet), records every run, and prints one summary.
func runFleet(cmd *cobra.Command, g *globalFlags, rf *runFlags, f *fleetFlags, name, format, requestedBy string) (err error) {
	if f.parallel < 1 || f.parallel > 256 {
		return fmt.Errorf("--parallel %d: want 1 to 256", f.parallel)
	}
	rb, _, err := findRunbook(cmd, g, name)
	if err != nil {
		return err
	}
	if _, err := fleet.DeploymentParam(rb, nil); err != nil {
		return err
	}
	given, err := rf.paramMap()
	if err != nil {
		return err
	}
	if _, err := fleet.DeploymentParam(rb, given); err != nil {
		return err
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
	deps, err := fleet.Select(rb, &bind.Fleet{Inventory: inv}, f.matching, given)
	if err != nil {
		return err
	}
	st, err := store.OpenLeased(cmd.Context(), g.store)
	if err != nil {
		return err
	}
	defer closeInto(&err, st)
	eng, closeRunners := bind.NewEngine(inv)
	defer closeRunners()

	start := time.Now()
	runs, err := fleet.Run(cmd.Context(), eng, st, rb, deps, fleet.Options{Params: given, Parallel: f.parallel, RequestedBy: requestedBy})
	if err != nil {
		return err
	}
	doc := fleet.Doc{Runbook: rb.Name, Params: rf.params, Parallel: f.parallel, DurationMS: time.Since(start).Milliseconds(), Runs: runs}
	if format == "json" {
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		err = enc.Encode(doc)
	} else {
		err = console.Fleet(cmd.OutOrStdout(), doc)
	}
	if err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	if code := exitFor(fleet.Worst(runs)); code != exitOK {
		return exitError{code}
	}
	return nil
}
