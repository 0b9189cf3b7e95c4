package fleet

import (
	"errors"
	"fmt"
	"maps"

	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/bind"
)

// DeploymentParam is the param a fleet run of rb sets per deployment.
// given, the params every deployment shares, must leave it out.
func DeploymentParam(rb *runbooks.Runbook, given map[string]string) (*runbooks.Param, error) {
	dp := rb.DeploymentParam()
	if dp == nil {
		return nil, fmt.Errorf("runbook %s has no deployment param: a fleet run sets one per deployment", rb.Name)
	}
	if _, ok := given[dp.Name]; ok {
		return nil, fmt.Errorf("--param %s: a fleet run sets it per deployment; leave it out", dp.Name)
	}
	return dp, nil
}

// Select lists the deployments of fl a fleet run of rb covers, by name,
// each with why the runbook cannot run on it, if it cannot: those whose
// names match glob (--deployments), or all for "" (--all-deployments).
// Bad input every deployment shares (an unknown or out-of-range param in
// given) is refused before anything runs.
func Select(rb *runbooks.Runbook, fl *bind.Fleet, glob string, given map[string]string) ([]bind.FleetMember, error) {
	dp, err := DeploymentParam(rb, given)
	if err != nil {
		return nil, err
	}
	deps, err := fl.Select(rb, glob)
	var bad *bind.BadGlobError
	if errors.As(err, &bad) {
		return nil, fmt.Errorf("--deployments %q: %w", bad.Glob, bad.Err)
	}
	if err != nil {
		return nil, err
	}
	probe := map[string]string{dp.Name: deps[0].Deployment}
	maps.Copy(probe, given)
	if _, _, err := rb.ResolveParams(probe); err != nil {
		return nil, err
	}
	return deps, nil
}
