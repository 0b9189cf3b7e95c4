package actions

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/runbot/runbot/internal/argspec"
	"github.com/runbot/runbot/remote"
)

var daemonReloadType = Type{
	RerunAfterRollback: true,
	Spec: argspec.Spec{
		Name: "daemon_reload",
		Doc: "Runs `systemctl daemon-reload` on the target so that systemd reads changed unit files and drop-ins. " +
			"Harmless, and not reversible (nothing to undo).",
		Args: []argspec.Arg{
			{Name: "reason", Type: argspec.String, Doc: "why the reload is needed, shown in the plan, e.g. 'the decode drop-in changes'"},
			{Name: "units", Type: argspec.StringList, Doc: "units whose NeedDaemonReload the plan reports; default: the target's unit"},
		},
	},
	Action:  DaemonReload{},
	Timeout: time.Minute,
}

// DaemonReload makes systemd reload its unit files, through the target's
// service manager.
type DaemonReload struct{}

// reloader returns the target's service manager when it has unit files to
// reload.
func reloader(env Env) (remote.UnitFileReloader, error) {
	switch m := env.Target.Services.(type) {
	case nil:
		return nil, fmt.Errorf("daemon_reload on %s: the target has no service manager", env.Target.Name())
	case remote.UnitFileReloader:
		return m, nil
	}
	return nil, fmt.Errorf("daemon_reload on %s: the target's services are not managed by systemd: there are no unit files to reload", env.Target.Name())
}

// Plan implements Action. It says why the reload is needed: the runbook's
// reason and which units systemd itself reports as changed on disk. It is
// never a no-op, because in a remediation the unit file or drop-in that
// needs the reload is usually edited by an earlier action of the same plan,
// after this plan was made.
func (DaemonReload) Plan(ctx context.Context, env Env) (Plan, error) {
	args := daemonReloadType.Spec.WithDefaults(env.Args)
	units := args.List("units")
	if len(units) == 0 && env.Target.Unit != "" {
		units = []string{env.Target.Unit}
	}
	rl, err := reloader(env)
	if err != nil {
		return Plan{}, fmt.Errorf("plan %w", err)
	}
	why := args.String("reason")
	if changed, err := rl.NeedDaemonReload(ctx, units); err != nil {
		why = join(why, fmt.Sprintf("(could not ask systemd which units changed: %v)", err))
	} else if len(changed) > 0 {
		why = join(why, fmt.Sprintf("systemd reports %s changed on disk (NeedDaemonReload=yes)", strings.Join(changed, ", ")))
	} else if why == "" {
		why = "a unit file or drop-in is to change before this step"
	}
	return Plan{
		Action:      daemonReloadType.Spec.Name,
		Target:      env.Target.Name(),
		Summary:     fmt.Sprintf("reload systemd's unit files on %s: %s", env.Target.Name(), why),
		Commands:    []string{rl.DaemonReloadCall()},
		Fingerprint: fingerprint("daemon_reload", env.Target.Host),
	}, nil
}

// Apply implements Action.
func (DaemonReload) Apply(ctx context.Context, env Env, plan Plan) (Applied, error) {
	rl, err := reloader(env)
	if err != nil {
		return Applied{}, fmt.Errorf("apply %w", err)
	}
	started := time.Now()
	if err := rl.DaemonReload(ctx); err != nil {
		return Applied{}, err
	}
	return Applied{Plan: plan, Changed: true, Detail: fmt.Sprintf("systemd on %s reloaded its unit files in %s", env.Target.Host, round(time.Since(started)))}, nil
}

// Rollback implements Action: there is nothing to undo.
func (DaemonReload) Rollback(context.Context, Env, Applied) error { return ErrNotReversible }

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
