package engine

import (
	"context"

	"github.com/runbot/runbot/internal/target"
	"github.com/runbot/runbot/runbooks"
)

// TargetRef names a target before it is resolved: a role of a deployment,
// or a host given directly by a host param.
type TargetRef struct {
	Deployment string
	Role       string
	Host       string
}

// Targets resolves target references to live targets. The inventory-backed
// implementation binds each to a runner from a pool, so one run uses one
// connection per host.
type Targets interface {
	Target(ctx context.Context, ref TargetRef) (target.Target, error)
}

// RefsFor returns the references for a list of step or action target
// names of rb under the given params.
func RefsFor(rb *runbooks.Runbook, names []string, params map[string]any) []TargetRef {
	dep := ""
	if p := rb.DeploymentParam(); p != nil {
		dep, _ = params[p.Name].(string)
	}
	refs := make([]TargetRef, len(names))
	for i, n := range names {
		if p := rb.Param(n); p != nil && p.Type == runbooks.ParamHost {
			h, _ := params[n].(string)
			refs[i] = TargetRef{Host: h, Role: n}
			continue
		}
		refs[i] = TargetRef{Deployment: dep, Role: n}
	}
	return refs
}
