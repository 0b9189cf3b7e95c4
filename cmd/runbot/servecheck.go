package main

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/runbot/runbot/config"
	"github.com/runbot/runbot/internal/yamlnode"
	"github.com/runbot/runbot/inventory"
	"github.com/runbot/runbot/runbooks"
)

// servePlan is what serve would run with: the config and what it points
// at, loaded and cross-checked, nothing opened.
type servePlan struct {
	cfg     *config.Config
	catalog *runbooks.Catalog
	inv     *inventory.Inventory
	// extraRunbooks are the runbook directories read before the config's
	// (--runbook-dir), which a reload reads again.
	extraRunbooks []string
}

// checkOverrides replace the config's paths for `serve --check`, so that a
// config can be checked before it is installed where its paths point.
type checkOverrides struct {
	inventory string
	runbooks  []string
}

// loadServePlan reads the config, the inventory and every runbook, and
// checks each reference the config makes (runbooks, params, deployments,
// groups) against them. Every problem of every file comes back at once,
// as file:line:col; err is for what is not a problem of a file (a
// directory that cannot be read).
func loadServePlan(cfgPath string, extraRunbooks []string, o checkOverrides) (*servePlan, yamlnode.Problems, error) {
	cfg, all, err := config.Check(cfgPath)
	if err != nil {
		return nil, nil, err
	}
	if cfg == nil {
		// References cannot be followed from a file that is not YAML.
		return nil, all, nil
	}
	p := &servePlan{cfg: cfg, extraRunbooks: extraRunbooks}
	dirs := cfg.Runbooks
	if o.runbooks != nil {
		dirs = o.runbooks
	} else {
		dirs = slices.DeleteFunc(slices.Clone(dirs), func(dir string) bool {
			if _, err := os.Stat(dir); err != nil {
				all = append(all, problemAt(cfg, "runbooks", "runbooks: %v", err))
				return true
			}
			return false
		})
	}
	catalog, problems, err := runbooks.LoadCatalog(append(append([]string(nil), extraRunbooks...), dirs...)...)
	if err != nil {
		return nil, nil, fmt.Errorf("load the runbooks of %s: %w", cfgPath, err)
	}
	all = append(all, problems...)
	p.catalog = catalog
	p.inv = &inventory.Inventory{Hosts: map[string]*inventory.Host{}, Deployments: map[string]*inventory.Deployment{}}
	invPath := cfg.Inventory
	if o.inventory != "" {
		invPath = o.inventory
	}
	invBroken := false
	if _, err := os.Stat(invPath); invPath != "" && err != nil && o.inventory == "" {
		all = append(all, problemAt(cfg, "inventory", "inventory: %v", err))
		invBroken = true
	} else if invPath != "" {
		inv, err := inventory.Load(invPath)
		if err != nil {
			ps, ok := asProblems(err)
			if !ok {
				return nil, nil, err
			}
			all = append(all, ps...)
			inv, invBroken = nil, true
		}
		if inv != nil {
			p.inv = inv
		}
	}
	// An inventory that did not load has been reported; every deployment
	// it would have had is not worth reporting missing too.
	checkInv := p.inv
	if invBroken {
		checkInv = nil
	}
	all = append(all, checkReferences(cfg, catalog, checkInv)...)
	all.Sort()
	return p, all, nil
}

// problemAt is an error at where the config wrote key.
func problemAt(cfg *config.Config, key, format string, args ...any) yamlnode.Problem {
	p := cfg.At.Of(key)
	return yamlnode.Problem{File: cfg.File, Line: p.Line, Col: p.Col, Severity: yamlnode.Error, Msg: fmt.Sprintf(format, args...)}
}

func asProblems(err error) (yamlnode.Problems, bool) {
	var pe *yamlnode.ProblemsError
	if errors.As(err, &pe) {
		return pe.Problems, true
	}
	return nil, false
}

// checkReferences reports, at the position each was written, every name
// the config uses that the catalog or the inventory does not have: what
// the alert routes, the scheduler and the chat commands would refuse at
// start, but said without a position.
func checkReferences(cfg *config.Config, catalog *runbooks.Catalog, inv *inventory.Inventory) yamlnode.Problems {
	d := &yamlnode.Decoder{File: cfg.File}
	names := catalog.Names()
	runbook := func(name string, at config.Positions, what string) *runbooks.Runbook {
		rb, err := catalog.Get(name)
		if err != nil {
			d.ErrorAt(at.Of("runbook"), "%s: unknown runbook %q%s", what, name, yamlnode.DidYouMean(name, names))
			return nil
		}
		return rb
	}
	params := func(rb *runbooks.Runbook, ps map[string]string, at config.Positions, what string) {
		for _, name := range slices.Sorted(maps.Keys(ps)) {
			if rb.Param(name) == nil {
				d.ErrorAt(at.Of("params."+name), "%s: runbook %s has no param %q%s", what, rb.Name, name, yamlnode.DidYouMean(name, paramNamesOf(rb)))
			}
		}
	}
	if cfg.Alerts != nil {
		for i, r := range cfg.Alerts.Routes {
			what := fmt.Sprintf("alert route %d", i+1)
			if rb := runbook(r.Runbook, r.At, what); rb != nil {
				params(rb, r.Params, r.At, what)
			}
			for _, name := range slices.Sorted(maps.Keys(r.Params)) {
				if _, err := runbooks.ParseTemplate(name, r.Params[name], false); err != nil {
					d.ErrorAt(r.At.Of("params."+name), "%s: param %s: %v", what, name, err)
				}
			}
		}
	}
	for i, s := range cfg.Schedules {
		what := fmt.Sprintf("schedule %d", i+1)
		rb := runbook(s.Runbook, s.At, what)
		if rb == nil {
			continue
		}
		params(rb, s.Params, s.At, what)
		checkScheduleValues(d, rb, s, inv, what)
		if inv != nil {
			checkScheduleDeployments(d, rb, s, inv, what)
		}
	}
	if cfg.Slack != nil {
		for i, r := range cfg.Slack.Authorize {
			for _, name := range r.Runbooks {
				if name == "*" {
					continue
				}
				if _, err := catalog.Get(name); err != nil {
					d.ErrorAt(r.At.Of("runbooks"), "authorize rule %d: unknown runbook %q%s", i+1, name, yamlnode.DidYouMean(name, names))
				}
			}
		}
	}
	return d.Problems
}

// checkScheduleValues reports a schedule param whose value the runbook
// would refuse (a type, range, pattern or choice it breaks) or, for a host
// param, a host the inventory does not have: the schedule would fail at
// every firing, and serve would only say so then. Deployment params are
// checkScheduleDeployments' to check.
func checkScheduleValues(d *yamlnode.Decoder, rb *runbooks.Runbook, s config.Schedule, inv *inventory.Inventory, what string) {
	for _, name := range slices.Sorted(maps.Keys(s.Params)) {
		p := rb.Param(name)
		if p == nil || p.Type == runbooks.ParamDeployment {
			continue
		}
		v := s.Params[name]
		if err := p.Check(v); err != nil {
			d.ErrorAt(s.At.Of("params."+name), "%s: param %s: %v", what, name, err)
			continue
		}
		if p.Type == runbooks.ParamHost && inv != nil {
			if _, err := inv.Host(v); err != nil {
				d.ErrorAt(s.At.Of("params."+name), "%s: param %s: %v", what, name, err)
			}
		}
	}
}

// checkScheduleDeployments reports a schedule whose deployment, or fleet
// selection, the inventory cannot run: it would fail at every firing.
func checkScheduleDeployments(d *yamlnode.Decoder, rb *runbooks.Runbook, s config.Schedule, inv *inventory.Inventory, what string) {
	dp := rb.DeploymentParam()
	if s.Deployments != "" {
		glob := s.Deployments
		if glob == "all" {
			glob = ""
		}
		members, err := runbooks.SelectDeployments(rb, inv, glob)
		if err != nil {
			d.ErrorAt(s.At.Of("deployments"), "%s: deployments %q: %v", what, s.Deployments, err)
			return
		}
		var lacking []string
		for _, m := range members {
			if m.Err == nil {
				return
			}
			lacking = append(lacking, m.Err.Error())
		}
		d.ErrorAt(s.At.Of("deployments"), "%s: deployments %q: no deployment can run runbook %s: %s", what, s.Deployments, rb.Name, strings.Join(lacking, "; "))
		return
	}
	if dp == nil {
		return
	}
	name, ok := s.Params[dp.Name]
	if !ok {
		return
	}
	members, err := runbooks.SelectDeployments(rb, inv, name)
	if err == nil {
		err = members[0].Err
	}
	if err != nil {
		d.ErrorAt(s.At.Of("params."+dp.Name), "%s: param %s: %v", what, dp.Name, err)
	}
}

func paramNamesOf(rb *runbooks.Runbook) []string {
	names := make([]string, len(rb.Params))
	for i, p := range rb.Params {
		names[i] = p.Name
	}
	return names
}

// reportCheck prints serve --check's problems, one per line on stdout, and
// a summary on stderr; an error among them is exit 1.
func reportCheck(cmd *cobra.Command, cfgPath string, problems yamlnode.Problems) error {
	out := newOutput(cmd.OutOrStdout())
	for _, p := range problems {
		out.println(p.String())
	}
	if errs := len(problems.Errors()); errs > 0 {
		note(cmd.ErrOrStderr(), "%s: %d error(s): runbot serve would not start\n", cfgPath, errs)
		return exitError{exitBadInput}
	}
	summary := fmt.Sprintf("%s: config, inventory, runbooks and their references checked: no errors", cfgPath)
	if w := len(problems); w > 0 {
		summary += fmt.Sprintf(", %d warning(s)", w)
	}
	note(cmd.ErrOrStderr(), "%s\n", summary)
	return out.err
}
