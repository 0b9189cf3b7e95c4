package checks

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"github.com/runbot/runbot/internal/argspec"
	"github.com/runbot/runbot/internal/step"
)

// UnitStateOutput is what the unit_state check exposes to expressions.
type UnitStateOutput struct {
	Unit          string        `expr:"unit" json:"unit" doc:"the unit inspected"`
	ActiveState   string        `expr:"active_state" json:"active_state" doc:"systemd ActiveState: active, activating, deactivating, inactive, failed, reloading"`
	SubState      string        `expr:"sub_state" json:"sub_state" doc:"systemd SubState, e.g. running, auto-restart, dead"`
	LoadState     string        `expr:"load_state" json:"load_state" doc:"systemd LoadState: loaded, not-found, masked, …"`
	Result        string        `expr:"result" json:"result" doc:"systemd Result of the last run: success, exit-code, signal, timeout, start-limit-hit, …"`
	MainPID       int           `expr:"main_pid" json:"main_pid" doc:"main process id; 0 when none"`
	NRestarts     int           `expr:"n_restarts" json:"n_restarts" doc:"automatic restarts since the unit was last started by hand"`
	ExecStatus    int           `expr:"exec_status" json:"exec_status" doc:"exit status of the main process's last run"`
	ActiveSince   time.Time     `expr:"active_since" json:"active_since" doc:"when the unit last became active; zero when it never did"`
	Uptime        time.Duration `expr:"uptime" json:"uptime" doc:"time since active_since while the unit is active; 0 otherwise"`
	Active        bool          `expr:"active" json:"active" doc:"ActiveState is active"`
	Failed        bool          `expr:"failed" json:"failed" doc:"ActiveState is failed"`
	StartLimitHit bool          `expr:"start_limit_hit" json:"start_limit_hit" doc:"systemd gave up restarting the unit (Result is start-limit-hit)"`
}

var unitStateType = Type{
	Spec: argspec.Spec{
		Name: "unit_state",
		Doc:  "Reads a unit's state from its service manager (systemd by default): active or not, main PID, restarts, uptime. On a systemd host logged in to as root it reads systemd's D-Bus API through the SSH connection, starting no process on the host; otherwise it runs `systemctl show`.",
		Args: []argspec.Arg{
			{Name: "unit", Type: argspec.String, Doc: "unit to inspect; defaults to the target's unit"},
		},
		Outputs: reflect.TypeFor[UnitStateOutput](),
	},
	Check:   UnitState{},
	Timeout: 15 * time.Second,
}

// UnitState is the unit_state check.
type UnitState struct{}

func unitArg(env Env) (string, error) {
	unit := unitStateType.Spec.WithDefaults(env.Args).String("unit")
	if unit == "" {
		unit = env.Target.Unit
	}
	if unit == "" {
		return "", fmt.Errorf("read unit state on %s: the target has no unit in the inventory and the step sets none", env.Target.Name())
	}
	return unit, nil
}

// Plan implements Check.
func (UnitState) Plan(env Env) []string {
	unit, err := unitArg(env)
	if err != nil {
		return []string{"unit_state: " + err.Error()}
	}
	return []string{fmt.Sprintf("read the state of %s on %s from its service manager", unit, hostName(env))}
}

// Run implements Check.
func (UnitState) Run(ctx context.Context, env Env) (step.Result, error) {
	unit, err := unitArg(env)
	if err != nil {
		return step.Result{}, err
	}
	if env.Target.Services == nil {
		return step.Result{}, fmt.Errorf("read state of %s on %s: no service manager for the host", unit, env.Target.Name())
	}
	st, err := env.Target.Services.Show(ctx, unit)
	if err != nil {
		return step.Result{}, fmt.Errorf("read state of %s on %s: %w", unit, env.Target.Name(), err)
	}
	now := clock(env)()
	o := UnitStateOutput{
		Unit: unit, ActiveState: st.ActiveState, SubState: st.SubState, LoadState: st.LoadState, Result: st.Result,
		MainPID: st.MainPID, NRestarts: st.NRestarts, ExecStatus: st.ExecStatus, ActiveSince: st.ActiveEnter,
		Active: st.ActiveState == "active", Failed: st.ActiveState == "failed", StartLimitHit: st.Result == "start-limit-hit",
	}
	if o.Active && !o.ActiveSince.IsZero() && now.After(o.ActiveSince) {
		o.Uptime = now.Sub(o.ActiveSince)
	}
	return step.Result{Values: o, Evidence: []string{unitStateEvidence(o, now)}}, nil
}

func unitStateEvidence(o UnitStateOutput, now time.Time) string {
	s := fmt.Sprintf("%s: %s (%s)", o.Unit, o.ActiveState, o.SubState)
	if o.LoadState != "" && o.LoadState != "loaded" {
		s += ", " + o.LoadState
	}
	if o.Active && !o.ActiveSince.IsZero() {
		s += fmt.Sprintf(" since %s (up %s)", clockText(o.ActiveSince, now), o.Uptime.Round(time.Second))
	}
	if o.MainPID > 0 {
		s += fmt.Sprintf(", pid %d", o.MainPID)
	}
	s += fmt.Sprintf(", %d automatic restarts", o.NRestarts)
	if o.Result != "" && o.Result != "success" {
		s += fmt.Sprintf(", last result %s (exit status %d)", o.Result, o.ExecStatus)
	}
	if o.StartLimitHit {
		s += " — systemd gave up restarting it"
	}
	return s
}
