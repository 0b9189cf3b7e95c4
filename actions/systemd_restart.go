package actions

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/runbot/runbot/internal/argspec"
	"github.com/runbot/runbot/remote"
)

// pollInterval is how often a restarted unit's state is read while waiting
// for it to become active.
const pollInterval = 500 * time.Millisecond

// UnitFailedError says a restarted unit did not come back: it failed (for
// instance systemd's start limit was hit), or it was still not active when
// the wait_active deadline passed. Restarting it again would not help, so
// the action never retries; humans decide.
type UnitFailedError struct {
	Unit        string
	Host        string
	ActiveState string
	SubState    string
	Result      string
	NRestarts   int
	// TimedOut says the deadline passed, after Waited, while the unit was
	// neither active nor failed.
	TimedOut bool
	Waited   time.Duration
	// Err is the service manager's own error, when it reported one.
	Err error
}

func (e *UnitFailedError) Error() string {
	state := fmt.Sprintf("ActiveState=%s SubState=%s Result=%s NRestarts=%d", e.ActiveState, e.SubState, e.Result, e.NRestarts)
	var msg string
	if e.TimedOut {
		msg = fmt.Sprintf("unit %s on %s did not become active within %s: %s", e.Unit, e.Host, round(e.Waited), state)
	} else {
		msg = fmt.Sprintf("unit %s on %s failed after restart: %s", e.Unit, e.Host, state)
	}
	if e.Result == "start-limit-hit" {
		msg += fmt.Sprintf(" (systemd's start limit was hit: it refuses further starts until `systemctl reset-failed %s`)", e.Unit)
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the service manager's error.
func (e *UnitFailedError) Unwrap() error { return e.Err }

var systemdRestartType = Type{
	RerunAfterRollback: true,
	Spec: argspec.Spec{
		Name: "systemd_restart",
		Doc: "Restarts units on the target through its service manager and waits until each is active again " +
			"with a new main process. A unit that fails or hits its start limit is reported, never restarted in a loop.",
		Args: []argspec.Arg{
			{Name: "units", Type: argspec.StringList, Doc: "units to restart, in this order; default: the target's unit"},
			{Name: "wait_active", Type: argspec.Duration, Default: 60 * time.Second, Min: time.Duration(0), Doc: "how long each unit may take to become active again; 0s does not wait"},
			{Name: "order", Type: argspec.String, Default: "sequential", Enum: []string{"sequential", "together"},
				Doc: "sequential: restart a unit and wait until it is active before the next; together: restart all in order, then wait for all"},
		},
	},
	Action:  SystemdRestart{},
	Timeout: 10 * time.Minute,
}

// SystemdRestart restarts units through env.Target.Services. It cannot be
// undone.
type SystemdRestart struct{}

// Plan implements Action. It reads each unit's state, so a unit that does
// not exist is refused before anyone approves restarting it.
func (SystemdRestart) Plan(ctx context.Context, env Env) (Plan, error) {
	args := systemdRestartType.Spec.WithDefaults(env.Args)
	units := args.List("units")
	if len(units) == 0 && env.Target.Unit != "" {
		units = []string{env.Target.Unit}
	}
	if len(units) == 0 {
		return Plan{}, fmt.Errorf("plan systemd_restart on %s: no units given and the target has no unit", env.Target.Name())
	}
	for _, u := range units {
		if u == "" || strings.ContainsAny(u, "\n\x00") {
			return Plan{}, fmt.Errorf("plan systemd_restart on %s: invalid unit name %q", env.Target.Name(), u)
		}
	}
	svc := env.Target.Services
	if svc == nil {
		return Plan{}, fmt.Errorf("plan systemd_restart on %s: the target has no service manager", env.Target.Name())
	}
	order := args.String("order")
	if err := (argspec.Arg{Enum: []string{"sequential", "together"}}).Validate(order); err != nil {
		return Plan{}, fmt.Errorf("plan systemd_restart on %s: order: %w", env.Target.Name(), err)
	}
	wait := args.Duration("wait_active")

	var now, pids []string
	for _, u := range units {
		st, err := svc.Show(ctx, u)
		if err != nil {
			return Plan{}, fmt.Errorf("plan systemd_restart on %s: %w", env.Target.Name(), err)
		}
		if st.LoadState == "not-found" {
			return Plan{}, fmt.Errorf("plan systemd_restart on %s: unit %s not found", env.Target.Name(), u)
		}
		now = append(now, fmt.Sprintf("%s is %s (MainPID %d)", u, describeState(st), st.MainPID))
		pids = append(pids, u+"="+strconv.Itoa(st.MainPID))
	}
	cmds := make([]string, len(units))
	for i, u := range units {
		cmds[i] = svc.RestartCall(u)
	}
	summary := fmt.Sprintf("restart %s on %s", strings.Join(units, " then "), env.Target.Name())
	switch {
	case wait <= 0:
		summary += ", without waiting for it to be active"
	case order == "together" && len(units) > 1:
		summary += fmt.Sprintf(", then wait until each is active again (at most %s each)", wait)
	default:
		summary += fmt.Sprintf(", waiting until each is active again (at most %s) before going on", wait)
	}
	// Said as of planning: the plan is shown again after it ran, when
	// these PIDs are gone, and the outcome names the new ones.
	summary += "; when planned, " + strings.Join(now, ", ")
	return Plan{
		Action:   systemdRestartType.Spec.Name,
		Target:   env.Target.Name(),
		Summary:  summary,
		Commands: cmds,
		// The processes are part of what was approved: the plan shows
		// "MainPID 1234", and a unit that has restarted since (a crash, a
		// colleague) is not the state the approvers looked at, so the
		// re-plan before applying differs and asks for a new approval.
		Fingerprint: fingerprint("systemd_restart", env.Target.Host, strings.Join(units, "\n"), order, wait.String(), strings.Join(pids, "\n")),
		Data: map[string]string{
			"units":       strings.Join(units, "\n"),
			"order":       order,
			"wait_active": wait.String(),
		},
	}, nil
}

// Apply implements Action. It restarts exactly the planned units in the
// planned order.
func (SystemdRestart) Apply(ctx context.Context, env Env, plan Plan) (Applied, error) {
	units := strings.Split(plan.Data["units"], "\n")
	wait, err := time.ParseDuration(plan.Data["wait_active"])
	if plan.Data["units"] == "" || err != nil {
		return Applied{}, fmt.Errorf("apply systemd_restart on %s: the plan names no units or no wait", env.Target.Name())
	}
	svc := env.Target.Services
	if svc == nil {
		return Applied{}, fmt.Errorf("apply systemd_restart on %s: the target has no service manager", env.Target.Name())
	}
	r := restarter{svc: svc, host: env.Target.Host, wait: wait}
	applied := Applied{Plan: plan, Data: map[string]string{}}
	var details []string
	record := func(u string, st remote.UnitState, took time.Duration) {
		applied.Changed = true
		applied.Data[u+".main_pid"] = strconv.Itoa(st.MainPID)
		applied.Data[u+".n_restarts"] = strconv.Itoa(st.NRestarts)
		applied.Data[u+".result"] = st.Result
		details = append(details, describeRestart(u, st, took, wait))
		applied.Detail = strings.Join(details, "; ")
	}

	if plan.Data["order"] == "together" {
		bases := make([]remote.UnitState, len(units))
		started := time.Now()
		for i, u := range units {
			if bases[i], err = r.restart(ctx, u); err != nil {
				return applied, err
			}
			applied.Changed = true
		}
		for i, u := range units {
			st, err := r.waitActive(ctx, u, bases[i])
			if err != nil {
				return applied, err
			}
			record(u, st, time.Since(started))
		}
		return applied, nil
	}
	for _, u := range units {
		started := time.Now()
		base, err := r.restart(ctx, u)
		if err != nil {
			return applied, err
		}
		applied.Changed = true
		st, err := r.waitActive(ctx, u, base)
		if err != nil {
			return applied, err
		}
		record(u, st, time.Since(started))
	}
	return applied, nil
}

// Rollback implements Action: a restart cannot be undone.
func (SystemdRestart) Rollback(context.Context, Env, Applied) error { return ErrNotReversible }

// restarter restarts one unit and watches it come back.
type restarter struct {
	svc  remote.ServiceManager
	host string
	wait time.Duration
}

// restart reads the unit's state, restarts it, and returns the state from
// before, against which waitActive recognises the new process.
func (r restarter) restart(ctx context.Context, unit string) (remote.UnitState, error) {
	base, err := r.svc.Show(ctx, unit)
	if err != nil {
		return base, fmt.Errorf("restart %s on %s: read its state first: %w", unit, r.host, err)
	}
	if err := r.svc.Restart(ctx, unit); err != nil {
		// The manager's message ("Job for x failed because ...") says less
		// than the unit's state does: report the state when it is failed.
		if st, serr := r.svc.Show(ctx, unit); serr == nil && isFailed(st) {
			return base, unitFailed(st, r.host, err)
		}
		return base, fmt.Errorf("restart %s on %s: %w", unit, r.host, err)
	}
	return base, nil
}

// waitActive polls the unit until it is active with a new main process (or
// a newer activation time), so that neither the old process nor a unit that
// died and came back by itself before the restart counts. A failed unit
// ends the wait at once; the deadline ends it with TimedOut.
func (r restarter) waitActive(ctx context.Context, unit string, base remote.UnitState) (remote.UnitState, error) {
	if r.wait <= 0 {
		return r.svc.Show(ctx, unit)
	}
	wctx, cancel := context.WithTimeout(ctx, r.wait)
	defer cancel()
	started := time.Now()
	last := base
	sawFailed := false
	for {
		st, err := r.svc.Show(wctx, unit)
		switch {
		case err != nil && wctx.Err() != nil && ctx.Err() == nil:
			e := unitFailed(last, r.host, err)
			e.TimedOut, e.Waited = true, time.Since(started)
			return st, e
		case err != nil:
			return st, fmt.Errorf("wait for %s on %s to become active: %w", unit, r.host, err)
		case isActiveAgain(base, st):
			return st, nil
		case isFailed(st):
			// A unit that was already failed before the restart may still
			// show its old state on the first read after an asynchronous
			// restart; a second failed read is the restart's own outcome.
			if !isFailed(base) || sawFailed {
				return st, unitFailed(st, r.host, nil)
			}
			sawFailed = true
		}
		last = st
		t := time.NewTimer(pollInterval)
		select {
		case <-t.C:
		case <-wctx.Done():
			t.Stop()
			if ctx.Err() != nil {
				return st, fmt.Errorf("wait for %s on %s to become active: %w", unit, r.host, context.Cause(ctx))
			}
			e := unitFailed(st, r.host, nil)
			e.TimedOut, e.Waited = true, time.Since(started)
			return st, e
		}
	}
}

func isActiveAgain(base, st remote.UnitState) bool {
	if st.ActiveState != "active" {
		return false
	}
	return base.ActiveState != "active" ||
		(st.MainPID != 0 && st.MainPID != base.MainPID) ||
		st.ActiveEnter.After(base.ActiveEnter)
}

func isFailed(st remote.UnitState) bool {
	return st.ActiveState == "failed" || st.Result == "start-limit-hit"
}

func unitFailed(st remote.UnitState, host string, err error) *UnitFailedError {
	return &UnitFailedError{
		Unit: st.Unit, Host: host,
		ActiveState: st.ActiveState, SubState: st.SubState, Result: st.Result, NRestarts: st.NRestarts,
		Err: err,
	}
}

func describeState(st remote.UnitState) string {
	s := st.ActiveState
	if st.SubState != "" {
		s += "/" + st.SubState
	}
	if s == "" {
		s = "in an unknown state"
	}
	return s
}

func describeRestart(unit string, st remote.UnitState, took, wait time.Duration) string {
	if wait <= 0 {
		return fmt.Sprintf("%s restarted, not waited on: %s (MainPID %d)", unit, describeState(st), st.MainPID)
	}
	s := fmt.Sprintf("%s active again after %s (MainPID %d, result %s, NRestarts %d)", unit, round(took), st.MainPID, st.Result, st.NRestarts)
	if st.NRestarts > 0 {
		// systemd clears NRestarts on an explicit restart, so any count
		// means the new process already died and was restarted by systemd.
		s += fmt.Sprintf("; systemd has restarted it %d time(s) on its own since, so it may be crash-looping", st.NRestarts)
	}
	return s
}
