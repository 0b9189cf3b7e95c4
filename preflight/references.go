package preflight

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/runbot/runbot/config"
	"github.com/runbot/runbot/internal/yamlnode"
	"github.com/runbot/runbot/inventory"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/bind"
	"github.com/runbot/runbot/runbooks/catalog"
	"github.com/runbot/runbot/runbooks/tmpl"
)

// References reports, at the position each was written, every name
// the config uses that the catalog or the inventory does not have: what
// the alert routes, the scheduler and the chat commands would refuse at
// start, but said without a position.
func References(cfg *config.Config, cat *catalog.Catalog, inv *inventory.Inventory) yamlnode.Problems {
	d := &yamlnode.Decoder{File: cfg.File}
	names := cat.Names()
	runbook := func(name string, at config.Positions, what string) *runbooks.Runbook {
		rb, err := cat.Get(name)
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
				if _, err := tmpl.Parse(name, r.Params[name], false); err != nil {
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
				if _, err := cat.Get(name); err != nil {
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
		members, err := bind.SelectDeployments(rb, inv, glob)
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
	members, err := bind.SelectDeployments(rb, inv, name)
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
