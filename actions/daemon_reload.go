package actions

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/runbot/runbot/internal/argspec"
	"github.com/runbot/runbot/internal/shell"
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

// daemonReloadLine is the one command the action runs.
const daemonReloadLine = "systemctl daemon-reload"

// DaemonReload makes systemd reload its unit files, through the target's
// runner.
type DaemonReload struct{}

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
	why := args.String("reason")
	if changed, err := needDaemonReload(ctx, env.Target.Runner, units); err != nil {
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
		Commands:    []string{daemonReloadLine},
		Fingerprint: fingerprint("daemon_reload", env.Target.Host),
	}, nil
}

// Apply implements Action.
func (DaemonReload) Apply(ctx context.Context, env Env, plan Plan) (Applied, error) {
	r := env.Target.Runner
	out, err := r.Run(ctx, remote.Command{Line: daemonReloadLine})
	if err != nil {
		return Applied{}, fmt.Errorf("reload systemd on %s: %w", r.Host(), err)
	}
	if out.ExitCode != 0 {
		return Applied{}, fmt.Errorf("reload systemd on %s: systemctl exited %d: %s", r.Host(), out.ExitCode, strings.TrimSpace(string(out.Stderr)))
	}
	return Applied{Plan: plan, Changed: true, Detail: fmt.Sprintf("systemd on %s reloaded its unit files in %s", r.Host(), round(out.Duration))}, nil
}

// Rollback implements Action: there is nothing to undo.
func (DaemonReload) Rollback(context.Context, Env, Applied) error { return ErrNotReversible }

// needDaemonReload lists the units whose files changed since systemd last
// read them.
func needDaemonReload(ctx context.Context, r remote.Runner, units []string) ([]string, error) {
	if len(units) == 0 {
		return nil, nil
	}
	out, err := r.Run(ctx, remote.Command{Line: shell.Join(append([]string{"systemctl", "show", "-p", "Id,NeedDaemonReload", "--"}, units...)...)})
	if err != nil {
		return nil, err
	}
	if out.ExitCode != 0 {
		return nil, fmt.Errorf("systemctl exited %d: %s", out.ExitCode, strings.TrimSpace(string(out.Stderr)))
	}
	// systemctl prints one block of properties per unit, blocks separated by
	// an empty line.
	var changed []string
	id := ""
	sc := bufio.NewScanner(bytes.NewReader(out.Stdout))
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), "=")
		switch k {
		case "Id":
			id = v
		case "NeedDaemonReload":
			if v == "yes" {
				changed = append(changed, id)
			}
		case "":
			id = ""
		}
	}
	return changed, nil
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
