package actions

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/argspec"
	"github.com/runbot/runbot/internal/shell"
	"github.com/runbot/runbot/remote"
)

// svcman is a service manager made of testdata/svcman.sh, which runs real
// processes, reached through the real local runner.
type svcman struct {
	dir string
	mgr remote.Commands
}

func newSvcman(t *testing.T, modes map[string]string) svcman {
	t.Helper()
	dir := t.TempDir()
	bin, err := filepath.Abs("testdata/svcman.sh")
	require.NoError(t, err)
	base := shell.Join("sh", bin, dir)
	m := svcman{dir: dir, mgr: remote.Commands{
		Runner:      &remote.Local{Name: "test-host"},
		ShowLine:    base + " show {unit}",
		RestartLine: base + " restart {unit}",
	}}
	t.Cleanup(func() {
		pids, _ := filepath.Glob(filepath.Join(dir, "*.pid"))
		for _, p := range pids {
			b, _ := os.ReadFile(p)
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	for unit, mode := range modes {
		require.NoError(t, os.WriteFile(filepath.Join(dir, unit+".mode"), []byte(mode), 0o644))
		if mode != "missing" {
			m.run(t, "start", unit)
		}
	}
	return m
}

func (m svcman) run(t *testing.T, verb, unit string) {
	t.Helper()
	out, err := m.mgr.Runner.Run(t.Context(), remote.Command{Line: shell.Join("sh", "testdata/svcman.sh", m.dir, verb, unit)})
	require.NoError(t, err)
	require.Zero(t, out.ExitCode, string(out.Stderr))
}

func (m svcman) pid(t *testing.T, unit string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(m.dir, unit+".pid"))
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	return pid
}

// restarts says how many times the manager was asked to restart the unit.
func (m svcman) restarts(unit string) int {
	b, _ := os.ReadFile(filepath.Join(m.dir, unit+".log"))
	return strings.Count(string(b), "restart")
}

func restartEnv(m svcman, args argspec.Values) Env {
	env := localEnv(args)
	env.Target.Services = m.mgr
	env.Target.Unit = "decode.service"
	return env
}

// alive says the process runs. A killed process whose parent shell has
// gone may linger as a zombie until init reaps it; it counts as dead.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z") && !strings.HasPrefix(rest, "X")
}

func TestSystemdRestartSequential(t *testing.T) {
	m := newSvcman(t, map[string]string{"decode.service": "ok", "prefill.service": "ok"})
	oldDecode, oldPrefill := m.pid(t, "decode.service"), m.pid(t, "prefill.service")
	env := restartEnv(m, argspec.Values{"units": []string{"decode.service", "prefill.service"}})
	var a SystemdRestart

	plan, err := a.Plan(testCtx(t), env)
	require.NoError(t, err)
	require.False(t, plan.Reversible)
	require.Equal(t, []string{
		strings.ReplaceAll(m.mgr.RestartLine, "{unit}", "decode.service"),
		strings.ReplaceAll(m.mgr.RestartLine, "{unit}", "prefill.service"),
	}, plan.Commands)
	require.Contains(t, plan.Summary, "restart decode.service then prefill.service on decode@test-host")
	require.Contains(t, plan.Summary, "; when planned, decode.service is active/running (MainPID "+strconv.Itoa(oldDecode)+")")
	require.Equal(t, 0, m.restarts("decode.service"), "planning restarts nothing")

	applied, err := a.Apply(testCtx(t), env, plan)
	require.NoError(t, err)
	require.True(t, applied.Changed)
	newDecode, newPrefill := m.pid(t, "decode.service"), m.pid(t, "prefill.service")
	require.NotEqual(t, oldDecode, newDecode)
	require.NotEqual(t, oldPrefill, newPrefill)
	require.False(t, alive(oldDecode), "the old decode process is gone")
	require.True(t, alive(newDecode))
	require.Equal(t, strconv.Itoa(newDecode), applied.Data["decode.service.main_pid"])
	require.Equal(t, "0", applied.Data["prefill.service.n_restarts"])
	require.Contains(t, applied.Detail, "decode.service active again after")
	require.Equal(t, 1, m.restarts("decode.service"))
	require.Equal(t, 1, m.restarts("prefill.service"))

	require.ErrorIs(t, a.Rollback(testCtx(t), env, applied), ErrNotReversible)
}

// TestSystemdRestartWaitsForNewProcess uses a manager whose restart returns
// before the new process replaces the old one: the old, still active
// process must not count as "active again".
func TestSystemdRestartWaitsForNewProcess(t *testing.T) {
	m := newSvcman(t, map[string]string{"decode.service": "async"})
	old := m.pid(t, "decode.service")
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		env := restartEnv(m, nil)
		plan, err := SystemdRestart{}.Plan(ctx, env)
		require.NoError(t, err)
		applied, err := SystemdRestart{}.Apply(ctx, env, plan)
		require.NoError(t, err)
		require.NotEqual(t, strconv.Itoa(old), applied.Data["decode.service.main_pid"])
		require.Equal(t, strconv.Itoa(m.pid(t, "decode.service")), applied.Data["decode.service.main_pid"])
	})
}

func TestSystemdRestartReportsSelfRestarts(t *testing.T) {
	m := newSvcman(t, map[string]string{"decode.service": "flap"})
	env := restartEnv(m, nil)
	plan, err := SystemdRestart{}.Plan(testCtx(t), env)
	require.NoError(t, err)
	applied, err := SystemdRestart{}.Apply(testCtx(t), env, plan)
	require.NoError(t, err)
	require.Equal(t, "1", applied.Data["decode.service.n_restarts"])
	require.Contains(t, applied.Detail, "may be crash-looping")
}

// TestSystemdRestartDeadline restarts a unit whose process dies at once
// while its manager keeps retrying: the wait ends at wait_active with a
// clear error, after exactly one restart request.
func TestSystemdRestartDeadline(t *testing.T) {
	m := newSvcman(t, map[string]string{"decode.service": "dies"})
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		env := restartEnv(m, argspec.Values{"wait_active": 20 * time.Second})
		plan, err := SystemdRestart{}.Plan(ctx, env)
		require.NoError(t, err)
		start := time.Now()
		applied, err := SystemdRestart{}.Apply(ctx, env, plan)
		var failed *UnitFailedError
		require.ErrorAs(t, err, &failed)
		require.True(t, failed.TimedOut)
		require.Equal(t, "decode.service", failed.Unit)
		require.Equal(t, "activating", failed.ActiveState)
		require.Equal(t, "auto-restart", failed.SubState)
		require.Equal(t, "exit-code", failed.Result)
		require.Greater(t, failed.NRestarts, 1)
		require.Equal(t, 20*time.Second, time.Since(start).Round(time.Second))
		require.ErrorContains(t, err, "decode.service on test-host did not become active within 20s")
		require.True(t, applied.Changed, "the restart did happen")
	})
	require.Equal(t, 1, m.restarts("decode.service"), "never restarted in a loop")
}

func TestSystemdRestartStartLimitHit(t *testing.T) {
	m := newSvcman(t, map[string]string{"decode.service": "limit", "prefill.service": "ok"})
	prefill := m.pid(t, "prefill.service")
	env := restartEnv(m, argspec.Values{"units": []string{"decode.service", "prefill.service"}})
	plan, err := SystemdRestart{}.Plan(testCtx(t), env)
	require.NoError(t, err)
	_, err = SystemdRestart{}.Apply(testCtx(t), env, plan)
	var failed *UnitFailedError
	require.ErrorAs(t, err, &failed)
	require.False(t, failed.TimedOut)
	require.Equal(t, "failed", failed.ActiveState)
	require.Equal(t, "start-limit-hit", failed.Result)
	require.ErrorContains(t, err, "systemctl reset-failed decode.service")
	require.ErrorContains(t, err, "attempted too often", "the manager's own message is kept")
	require.Equal(t, 1, m.restarts("decode.service"), "never restarted in a loop")
	require.Equal(t, 0, m.restarts("prefill.service"), "a failed unit stops the sequence")
	require.Equal(t, prefill, m.pid(t, "prefill.service"))
}

func TestSystemdRestartTogether(t *testing.T) {
	m := newSvcman(t, map[string]string{"a.service": "ok", "b.service": "ok"})
	oldA, oldB := m.pid(t, "a.service"), m.pid(t, "b.service")
	env := restartEnv(m, argspec.Values{"units": []string{"a.service", "b.service"}, "order": "together"})
	plan, err := SystemdRestart{}.Plan(testCtx(t), env)
	require.NoError(t, err)
	require.Contains(t, plan.Summary, "then wait until each is active again")
	applied, err := SystemdRestart{}.Apply(testCtx(t), env, plan)
	require.NoError(t, err)
	require.NotEqual(t, strconv.Itoa(oldA), applied.Data["a.service.main_pid"])
	require.NotEqual(t, strconv.Itoa(oldB), applied.Data["b.service.main_pid"])
}

func TestSystemdRestartPlanErrors(t *testing.T) {
	m := newSvcman(t, map[string]string{"gone.service": "missing"})
	cases := []struct {
		name string
		env  Env
		want string
	}{
		{"unit not found", restartEnv(m, argspec.Values{"units": []string{"gone.service"}}), "unit gone.service not found"},
		{"no unit", func() Env { e := restartEnv(m, nil); e.Target.Unit = ""; return e }(), "no units given"},
		{"bad order", restartEnv(m, argspec.Values{"order": "random"}), "order"},
		{"no manager", localEnv(argspec.Values{"units": []string{"x"}}), "no service manager"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := SystemdRestart{}.Plan(testCtx(t), tc.env)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// TestSystemdRestartPlanBindsTheProcesses: the plan shows each unit's
// MainPID, so a unit that restarted after planning (a crash, someone else)
// gives a different fingerprint and so a different plan hash; planning an
// unchanged unit again gives the same one.
func TestSystemdRestartPlanBindsTheProcesses(t *testing.T) {
	m := newSvcman(t, map[string]string{"decode.service": "ok"})
	env := restartEnv(m, argspec.Values{"units": []string{"decode.service"}})
	var a SystemdRestart
	first, err := a.Plan(testCtx(t), env)
	require.NoError(t, err)
	again, err := a.Plan(testCtx(t), env)
	require.NoError(t, err)
	require.Equal(t, first.Fingerprint, again.Fingerprint, "nothing changed")

	before := m.pid(t, "decode.service")
	m.run(t, "restart", "decode.service")
	require.NotEqual(t, before, m.pid(t, "decode.service"))
	after, err := a.Plan(testCtx(t), env)
	require.NoError(t, err)
	require.NotEqual(t, first.Fingerprint, after.Fingerprint, "another process than the one shown")
	require.Contains(t, after.Summary, "MainPID "+strconv.Itoa(m.pid(t, "decode.service")))
}
