package bind

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/runbot/runbot/inventory"
	"github.com/runbot/runbot/runbooks"
)

// FleetMember is one inventory deployment a fleet run covers: the CLI's
// --all-deployments and a schedule's `deployments:`.
type FleetMember struct {
	Deployment string
	// Err says why the runbook cannot run on the deployment (it lacks a
	// role the runbook's steps target); nil when it can.
	Err error
}

// BadGlobError is a deployment glob that does not parse.
type BadGlobError struct {
	Glob string
	Err  error
}

func (e *BadGlobError) Error() string {
	return fmt.Sprintf("deployment glob %q: %v", e.Glob, e.Err)
}

func (e *BadGlobError) Unwrap() error { return e.Err }

// NoDeploymentsError says that a fleet selection matched no deployment of
// the inventory; Glob is empty when every deployment was asked for.
type NoDeploymentsError struct {
	File string
	Glob string
	// Known are the inventory's deployments, sorted.
	Known []string
}

func (e *NoDeploymentsError) Error() string {
	if e.Glob == "" {
		return fmt.Sprintf("inventory %s has no deployments", e.File)
	}
	known := "none"
	if len(e.Known) > 0 {
		known = strings.Join(e.Known, ", ")
	}
	return fmt.Sprintf("inventory %s has no deployment matching %q (deployments: %s)", e.File, e.Glob, known)
}

// CheckGlob says whether glob is a valid deployment glob (path.Match
// syntax); the empty glob selects every deployment.
func CheckGlob(glob string) error {
	if _, err := path.Match(glob, ""); err != nil {
		return &BadGlobError{Glob: glob, Err: err}
	}
	return nil
}

// SelectDeployments lists, sorted by name, the deployments of inv that a
// fleet run of rb covers: those whose names match glob (every one when
// glob is empty). A matching deployment that lacks a role rb's steps
// target is listed with Err saying so, so that a caller can show why it
// was not run instead of failing the others. It is an error when rb has no
// deployment param to set, when glob does not parse (*BadGlobError) and
// when nothing matches (*NoDeploymentsError).
func SelectDeployments(rb *runbooks.Runbook, inv *inventory.Inventory, glob string) ([]FleetMember, error) {
	if rb.DeploymentParam() == nil {
		return nil, fmt.Errorf("runbook %s has no deployment param: a fleet run sets one per deployment", rb.Name)
	}
	if err := CheckGlob(glob); err != nil {
		return nil, err
	}
	roles := rb.TargetRoles()
	known := slices.Sorted(maps.Keys(inv.Deployments))
	var out []FleetMember
	for _, name := range known {
		if glob != "" {
			if ok, _ := path.Match(glob, name); !ok {
				continue
			}
		}
		m := FleetMember{Deployment: name}
		var missing []string
		for _, r := range roles {
			if _, ok := inv.Deployments[name].Roles[r]; !ok {
				missing = append(missing, r)
			}
		}
		if len(missing) > 0 {
			m.Err = fmt.Errorf("deployment %s has no role %s, which runbook %s targets", name, strings.Join(missing, ", "), rb.Name)
		}
		out = append(out, m)
	}
	if len(out) == 0 {
		return nil, &NoDeploymentsError{File: inv.File, Glob: glob, Known: known}
	}
	return out, nil
}

// Fleet is one inventory's deployments, as fleet runs pick from them; it
// lets a trigger that knows runbooks but not the inventory (the scheduler)
// select deployments.
type Fleet struct {
	Inventory *inventory.Inventory
}

// Select is SelectDeployments over the fleet's inventory.
func (f *Fleet) Select(rb *runbooks.Runbook, glob string) ([]FleetMember, error) {
	return SelectDeployments(rb, f.Inventory, glob)
}
