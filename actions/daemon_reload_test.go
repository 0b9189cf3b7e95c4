package actions

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/argspec"
)

// fakeSystemctl puts a systemctl script first on PATH: this machine has no
// systemd to talk to. It logs its arguments and answers `show` with the
// given output; `daemon-reload` exits with reloadExit.
func fakeSystemctl(t *testing.T, show, reloadExit string) (log string) {
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

func TestDaemonReload(t *testing.T) {
	log := fakeSystemctl(t, `Id=decode.service\nNeedDaemonReload=yes\n\nId=prefill.service\nNeedDaemonReload=no\n`, "0")
	env := localEnv(argspec.Values{"units": []string{"decode.service", "prefill.service"}, "reason": "the decode drop-in changes"})
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
	plan, err := DaemonReload{}.Plan(testCtx(t), localEnv(nil))
	require.NoError(t, err)
	require.False(t, plan.NoOp, "the file that needs the reload may be edited after planning")
	require.Contains(t, plan.Summary, "a unit file or drop-in is to change before this step")
}

func TestDaemonReloadFailure(t *testing.T) {
	fakeSystemctl(t, `Id=decode.service\nNeedDaemonReload=no\n`, "1")
	env := localEnv(nil)
	plan, err := DaemonReload{}.Plan(testCtx(t), env)
	require.NoError(t, err)
	_, err = DaemonReload{}.Apply(testCtx(t), env, plan)
	require.ErrorContains(t, err, "systemctl exited 1: Failed to reload daemon: Access denied")
}
