package actions

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/argspec"
	"github.com/runbot/runbot/remote"
)

// fakeSystemctl puts a systemctl script first on PATH: this machine has no
// systemd to talk to. It logs its arguments and answers `show` with the
// given output; `daemon-reload` exits with reloadExit.
func fakeSystemctl(t *testing.T, show, reloadExit string) (log string) {
	t.Helper()
	dir := t.TempDir()
	log = filepath.Join(dir, "calls")
	script := `#!/bin/sh
echo "$*" >> ` + log + `
case $1 in
show) printf '` + show + `' ;;
daemon-reload) [ ` + reloadExit + ` = 0 ] || echo "Failed to reload daemon: Access denied" >&2; exit ` + reloadExit + ` ;;
esac
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "systemctl"), []byte(script), 0o755))
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return log
}

// systemdEnv is localEnv with systemd, through systemctl, as the target's
// service manager.
func systemdEnv(args argspec.Values) Env {
	env := localEnv(args)
	env.Target.Services = remote.Systemctl{Runner: env.Target.Runner}
	return env
}

func TestDaemonReload(t *testing.T) {
	log := fakeSystemctl(t, `Id=decode.service\nNeedDaemonReload=yes\n\nId=prefill.service\nNeedDaemonReload=no\n`, "0")
	env := systemdEnv(argspec.Values{"units": []string{"decode.service", "prefill.service"}, "reason": "the decode drop-in changes"})
	var a DaemonReload
	plan, err := a.Plan(testCtx(t), env)
	require.NoError(t, err)
	require.Equal(t, []string{"systemctl daemon-reload"}, plan.Commands)
	require.False(t, plan.Reversible)
	require.Equal(t, "reload systemd's unit files on decode@test-host: the decode drop-in changes; systemd reports decode.service changed on disk (NeedDaemonReload=yes)", plan.Summary)

	applied, err := a.Apply(testCtx(t), env, plan)
	require.NoError(t, err)
	require.True(t, applied.Changed)
	calls, err := os.ReadFile(log)
	require.NoError(t, err)
	require.Equal(t, "show -p Id,NeedDaemonReload -- decode.service prefill.service\ndaemon-reload\n", string(calls))
	require.ErrorIs(t, a.Rollback(testCtx(t), env, applied), ErrNotReversible)
}

func TestDaemonReloadSaysWhyWithoutChanges(t *testing.T) {
	fakeSystemctl(t, `Id=decode.service\nNeedDaemonReload=no\n`, "0")
	plan, err := DaemonReload{}.Plan(testCtx(t), systemdEnv(nil))
	require.NoError(t, err)
	require.False(t, plan.NoOp, "the file that needs the reload may be edited after planning")
	require.Contains(t, plan.Summary, "a unit file or drop-in is to change before this step")
}

func TestDaemonReloadFailure(t *testing.T) {
	fakeSystemctl(t, `Id=decode.service\nNeedDaemonReload=no\n`, "1")
	env := systemdEnv(nil)
	plan, err := DaemonReload{}.Plan(testCtx(t), env)
	require.NoError(t, err)
	_, err = DaemonReload{}.Apply(testCtx(t), env, plan)
	require.ErrorContains(t, err, "systemctl exited 1: Failed to reload daemon: Access denied")
}

// TestDaemonReloadNeedsUnitFiles: a host whose services are run by
// configured commands has no unit files; nothing is reloaded behind its
// service manager's back.
func TestDaemonReloadNeedsUnitFiles(t *testing.T) {
	log := fakeSystemctl(t, `Id=decode.service\nNeedDaemonReload=yes\n`, "0")
	env := localEnv(nil)
	_, err := DaemonReload{}.Plan(testCtx(t), env)
	require.ErrorContains(t, err, "plan daemon_reload on decode@test-host: the target has no service manager")
	env.Target.Services = remote.Commands{Runner: env.Target.Runner, ShowLine: "true", RestartLine: "true"}
	_, err = DaemonReload{}.Plan(testCtx(t), env)
	require.ErrorContains(t, err, "not managed by systemd")
	_, err = DaemonReload{}.Apply(testCtx(t), env, Plan{Action: "daemon_reload"})
	require.ErrorContains(t, err, "apply daemon_reload on decode@test-host: the target's services are not managed by systemd")
	require.NoFileExists(t, log, "systemctl was never run")
}
