// Package actions holds runbot's remediation actions (restart a unit, edit a
// launch script, ...). Each action first plans — says exactly what it would
// change, with a diff — and only applies a plan that was approved.
package actions

import (
	"context"
	"time"

	"github.com/runbot/runbot/internal/argspec"
	"github.com/runbot/runbot/internal/target"
)

// Action is one action type. Implementations are stateless.
type Action interface {
	// Plan reads the target's current state and describes the change. It
	// changes nothing. The plan's Fingerprint covers everything Apply will
	// rely on (e.g. the file's current content), so an approval granted to
	// one plan cannot be used after the world changed.
	Plan(ctx context.Context, env Env) (Plan, error)
	// Apply carries out a plan made earlier. It must refuse (with
	// ErrPlanStale) when the target no longer matches the plan.
	Apply(ctx context.Context, env Env, plan Plan) (Applied, error)
	// Rollback undoes an Apply of a reversible plan.
	Rollback(ctx context.Context, env Env, applied Applied) error
}

// Env is everything one execution of an action receives.
type Env struct {
	Target target.Target
	Args   argspec.Values
	Now    func() time.Time
}

// Plan is what an action would do on one target.
type Plan struct {
	Action string `json:"action"`
	Target string `json:"target"`
	// Summary is one line for humans: "restart decode.service on gpu-1".
	Summary string `json:"summary"`
	// Diff is a unified diff for file changes, empty otherwise.
	Diff string `json:"diff,omitempty"`
	// Commands are the exact commands Apply will run.
	Commands []string `json:"commands,omitempty"`
	// NoOp says the target already is in the wanted state.
	NoOp       bool `json:"noop,omitempty"`
	Reversible bool `json:"reversible"`
	// Fingerprint identifies the state the plan was made against.
	Fingerprint string `json:"fingerprint"`
	// Data carries what Apply needs (e.g. the new file content, the backup
	// name the plan shows). The plan hash covers it through the Fingerprint
	// and Diff it is made from rather than byte for byte, so that a backup's
	// timestamp does not change the hash; Apply is given the approved plan's
	// Data, never a re-made one's.
	Data map[string]string `json:"data,omitempty"`
}

// Applied records what Apply did, enough for Rollback.
type Applied struct {
	Plan    Plan              `json:"plan"`
	Changed bool              `json:"changed"`
	Detail  string            `json:"detail,omitempty"`
	Data    map[string]string `json:"data,omitempty"`
}

// Type registers one action type.
type Type struct {
	Spec    argspec.Spec
	Action  Action
	Timeout time.Duration
	// RerunAfterRollback says the action makes earlier changes take
	// effect (a restart loads an edited launch script). When a plan's
	// changes are rolled back, it runs again after them so the rollback
	// takes effect too; otherwise the process would keep running with the
	// change that did not help. A runbook may override it per action.
	RerunAfterRollback bool
}
