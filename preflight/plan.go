// Package preflight reads serve's config and everything it names (the
// inventory, the runbooks) and checks every reference between them, as
// `runbot serve --check` prints and as serve and a reload refuse: each
// problem at its file:line:col, all in one pass, nothing opened or
// started.
package preflight

import (
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/runbot/runbot/config"
	"github.com/runbot/runbot/internal/yamlnode"
	"github.com/runbot/runbot/inventory"
	"github.com/runbot/runbot/runbooks/catalog"
)

// Plan is what serve would run with: the config and what it points at,
// loaded and cross-checked, nothing opened.
type Plan struct {
	Config    *config.Config
	Catalog   *catalog.Catalog
	Inventory *inventory.Inventory
	// ExtraRunbooks are the runbook directories read before the config's
	// (--runbook-dir), which a reload reads again.
	ExtraRunbooks []string
	// Overrides are the paths --check was given instead of the config's:
	// with them the config is checked before it is installed, and the
	// files its paths and the inventory's name are the target host's,
	// which Files does not look for here.
	Overrides Overrides
}

// Overrides replace the config's paths for `serve --check`, so that a
// config can be checked before it is installed where its paths point.
type Overrides struct {
	Inventory string
	Runbooks  []string
}

// Load reads the config, the inventory and every runbook, and
// checks each reference the config makes (runbooks, params, deployments,
// groups) against them. Every problem of every file comes back at once,
// as file:line:col; err is for what is not a problem of a file (a
// directory that cannot be read).
func Load(cfgPath string, extraRunbooks []string, o Overrides) (*Plan, yamlnode.Problems, error) {
	cfg, all, err := config.Check(cfgPath)
	if err != nil {
		return nil, nil, err
	}
	if cfg == nil {
		// References cannot be followed from a file that is not YAML.
		return nil, all, nil
	}
	p := &Plan{Config: cfg, ExtraRunbooks: extraRunbooks, Overrides: o}
	dirs := cfg.Runbooks
	if o.Runbooks != nil {
		dirs = o.Runbooks
	} else {
		dirs = slices.DeleteFunc(slices.Clone(dirs), func(dir string) bool {
			if _, err := os.Stat(abs(dir)); err != nil {
				all = append(all, problemAt(cfg, "runbooks", "runbooks: %v", err))
				return true
			}
			return false
		})
	}
	cat, problems, err := catalog.Load(append(append([]string(nil), extraRunbooks...), dirs...)...)
	if err != nil {
		return nil, nil, fmt.Errorf("load the runbooks of %s: %w", cfgPath, err)
	}
	all = append(all, problems...)
	p.Catalog = cat
	p.Inventory = &inventory.Inventory{Hosts: map[string]*inventory.Host{}, Deployments: map[string]*inventory.Deployment{}}
	invPath := cfg.Inventory
	if o.Inventory != "" {
		invPath = o.Inventory
	}
	invBroken := false
	if _, err := os.Stat(abs(invPath)); invPath != "" && err != nil && o.Inventory == "" {
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
			p.Inventory = inv
		}
	}
	// An inventory that did not load has been reported; every deployment
	// it would have had is not worth reporting missing too.
	checkInv := p.Inventory
	if invBroken {
		checkInv = nil
	}
	all = append(all, References(cfg, cat, checkInv)...)
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
