package remote_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/remote"
)

// fakeSystemctl puts a systemctl script first on PATH that logs its
// arguments and answers show with the given output.
func fakeSystemctl(t *testing.T, show string, exit int) (log string) {
	t.Helper()
	dir := t.TempDir()
	log = filepath.Join(dir, "calls")
	script := "#!/bin/sh\necho \"$*\" >> " + log + "\ncase $1 in show) printf '" + show + "' ;; esac\n"
	if exit != 0 {
		script += "echo 'Access denied' >&2; exit 1\n"
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "systemctl"), []byte(script), 0o755))
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return log
}

func TestSystemctlDaemonReload(t *testing.T) {
	log := fakeSystemctl(t, `Id=a.service\nNeedDaemonReload=yes\n\nId=b.service\nNeedDaemonReload=no\n\nId=c.service\nNeedDaemonReload=yes\n`, 0)
	s := remote.Systemctl{Runner: &remote.Local{Name: "h"}}
	changed, err := s.NeedDaemonReload(testCtx(t), []string{"a.service", "b.service", "c.service"})
	require.NoError(t, err)
	require.Equal(t, []string{"a.service", "c.service"}, changed)
	none, err := s.NeedDaemonReload(testCtx(t), nil)
	require.NoError(t, err)
	require.Empty(t, none)
	require.NoError(t, s.DaemonReload(testCtx(t)))
	calls, err := os.ReadFile(log)
	require.NoError(t, err)
	require.Equal(t, "show -p Id,NeedDaemonReload -- a.service b.service c.service\ndaemon-reload\n", string(calls))
	require.Equal(t, "systemctl daemon-reload", s.DaemonReloadCall())

	fakeSystemctl(t, "", 1)
	require.EqualError(t, s.DaemonReload(testCtx(t)), "reload systemd on h: systemctl exited 1: Access denied")
	_, err = s.NeedDaemonReload(testCtx(t), []string{"a.service"})
	require.EqualError(t, err, "systemctl exited 1: Access denied")
}

func TestRestartCall(t *testing.T) {
	r := &remote.Local{Name: "h"}
	for _, c := range []struct {
		mgr  remote.ServiceManager
		want string
	}{
		{remote.Systemctl{Runner: r}, "systemctl restart 'sglang decode'"},
		{&remote.Systemctl{Runner: r}, "systemctl restart 'sglang decode'"},
		{remote.Commands{Runner: r, RestartLine: "ctl restart {unit} --wait"}, "ctl restart 'sglang decode' --wait"},
		{&remote.Commands{Runner: r, RestartLine: "ctl restart {unit}"}, "ctl restart 'sglang decode'"},
		{&remote.DBus{}, `D-Bus org.freedesktop.systemd1.Manager.RestartUnit("sglang decode.service", "replace")`},
	} {
		require.Equal(t, c.want, c.mgr.RestartCall("sglang decode"))
	}
	_, ok := remote.ServiceManager(remote.Commands{}).(remote.UnitFileReloader)
	require.False(t, ok, "services run by commands have no unit files")
}
