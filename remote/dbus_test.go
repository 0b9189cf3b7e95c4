package remote

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/stretchr/testify/require"
)

func TestUnitName(t *testing.T) {
	cases := map[string]string{
		"sglang-dsv4-decode":         "sglang-dsv4-decode.service",
		"sglang-dsv4-decode.service": "sglang-dsv4-decode.service",
		"runbot.timer":               "runbot.timer",
		"data.mount":                 "data.mount",
		"v1.2":                       "v1.2.service",
	}
	for in, want := range cases {
		require.Equal(t, want, UnitName(in), in)
	}
	require.Equal(t, "Service", unitInterface("x.service"))
	require.Equal(t, "Automount", unitInterface("x.automount"))
	require.Empty(t, unitInterface("x"))
}

// TestUnitStateFromProperties maps properties typed as the D-Bus library
// decodes systemd's (u for MainPID, i for ExecMainStatus, t for
// timestamps, b, as) and checks both the fields and the text in Props
// match what `systemctl show` prints.
func TestUnitStateFromProperties(t *testing.T) {
	enter := time.Date(2026, 6, 18, 20, 38, 3, 123456000, time.UTC)
	unit := map[string]any{
		"Id":                    "sglang-dsv4-decode.service",
		"LoadState":             "loaded",
		"ActiveState":           "active",
		"SubState":              "running",
		"ActiveEnterTimestamp":  uint64(enter.UnixMicro()),
		"InactiveExitTimestamp": uint64(0),
		"CanRestart":            true,
		"Names":                 []string{"sglang-dsv4-decode.service", "decode.service"},
	}
	service := map[string]any{
		"MainPID":        uint32(48213),
		"NRestarts":      uint32(2),
		"ExecMainStatus": int32(-1),
		"Result":         "success",
		"MemoryCurrent":  uint64(1 << 30),
	}
	st := unitStateFromProperties("sglang-dsv4-decode.service", unit, service)
	require.Equal(t, "sglang-dsv4-decode.service", st.Unit)
	require.Equal(t, "loaded", st.LoadState)
	require.Equal(t, "active", st.ActiveState)
	require.Equal(t, "running", st.SubState)
	require.Equal(t, "success", st.Result)
	require.Equal(t, 48213, st.MainPID)
	require.Equal(t, 2, st.NRestarts)
	require.Equal(t, -1, st.ExecStatus)
	require.True(t, enter.Equal(st.ActiveEnter), "timestamps keep their microseconds: %s", st.ActiveEnter)

	require.Equal(t, "48213", st.Props["MainPID"])
	require.Equal(t, "-1", st.Props["ExecMainStatus"])
	require.Equal(t, "yes", st.Props["CanRestart"])
	require.Equal(t, "1073741824", st.Props["MemoryCurrent"])
	require.Empty(t, st.Props["InactiveExitTimestamp"])
	require.Equal(t, "sglang-dsv4-decode.service decode.service", st.Props["Names"])
	parsed, err := ParseSystemdTime(st.Props["ActiveEnterTimestamp"])
	require.NoError(t, err, "the text form must be what ParseSystemdTime reads")
	require.Equal(t, enter.Truncate(time.Second).Unix(), parsed.Unix())
}

func TestDBusWithoutSystemBus(t *testing.T) {
	t.Setenv("DBUS_SYSTEM_BUS_ADDRESS", "unix:path="+filepath.Join(t.TempDir(), "no-bus"))
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	d := &DBus{Name: "gpu-node-01"}
	_, err := d.Show(ctx, "sglang-dsv4-decode")
	require.ErrorContains(t, err, "show unit sglang-dsv4-decode.service on gpu-node-01: connect to systemd over the system bus")
	err = d.Restart(ctx, "sglang-dsv4-decode")
	require.ErrorContains(t, err, "restart unit sglang-dsv4-decode.service on gpu-node-01: connect to systemd")
	err = d.DaemonReload(ctx)
	require.ErrorContains(t, err, "reload systemd on gpu-node-01: connect to systemd")
}

// TestDBusOnPrivateBus runs DBus against a real dbus-daemon on which a
// small stand-in for systemd owns org.freedesktop.systemd1: the calls,
// unit path escaping, the job-completion signal and the property types all
// go through the real D-Bus client. systemd itself is exercised on the
// systemd test hosts.
func TestDBusOnPrivateBus(t *testing.T) {
	addr := startBus(t)
	sd := startFakeSystemd(t, addr)
	d := &DBus{Name: "gpu-node-01", Connect: func(ctx context.Context) (*dbus.Conn, error) {
		return dbus.Connect(addr, dbus.WithContext(ctx))
	}}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()

	before, err := d.Show(ctx, "sglang-dsv4-decode")
	require.NoError(t, err)
	require.Equal(t, "active", before.ActiveState)
	require.Equal(t, 100, before.MainPID)

	require.NoError(t, d.Restart(ctx, "sglang-dsv4-decode"))
	after, err := d.Show(ctx, "sglang-dsv4-decode.service")
	require.NoError(t, err)
	require.Equal(t, 101, after.MainPID)
	require.True(t, after.ActiveEnter.After(before.ActiveEnter))
	require.Equal(t, []string{"sglang-dsv4-decode.service replace"}, sd.calls())

	sd.setResult("failed")
	err = d.Restart(ctx, "sglang-dsv4-decode")
	var job *JobError
	require.ErrorAs(t, err, &job)
	require.Equal(t, "failed", job.Result)
	require.Equal(t, "sglang-dsv4-decode.service", job.Unit)

	missing, err := d.Show(ctx, "missing")
	require.NoError(t, err, "systemd answers for units it cannot find")
	require.Equal(t, "not-found", missing.LoadState)
	require.Zero(t, missing.MainPID)
	require.NotContains(t, missing.Props, "Result", "a unit without a file has no service properties worth showing")

	// Only the properties runbot keeps are asked for, one Get each.
	sd.mu.Lock()
	sd.gets = 0
	sd.mu.Unlock()
	st, err := d.Show(ctx, "sglang-dsv4-decode")
	require.NoError(t, err)
	sd.mu.Lock()
	require.Equal(t, len(ShowProperties), sd.gets)
	sd.mu.Unlock()
	require.ElementsMatch(t, ShowProperties, slices.Collect(maps.Keys(st.Props)))
	require.Equal(t, "success", st.Result)
	require.Equal(t, "sglang-dsv4-decode.service", st.Props["Id"])

	// A target has no MainPID, Result or restarts: absent, not an error.
	target, err := d.Show(ctx, "multi-user.target")
	require.NoError(t, err)
	require.Equal(t, "active", target.ActiveState)
	require.Zero(t, target.MainPID)
	require.NotContains(t, target.Props, "MainPID")
	require.Equal(t, `D-Bus org.freedesktop.systemd1.Manager.RestartUnit("x.service", "replace")`, d.RestartCall("x"))
}

// TestDBusDaemonReload: which units changed on disk, and the reload, go
// through systemd's D-Bus API.
func TestDBusDaemonReload(t *testing.T) {
	addr := startBus(t)
	sd := startFakeSystemd(t, addr)
	d := &DBus{Name: "gpu-node-01", Connect: func(ctx context.Context) (*dbus.Conn, error) {
		return dbus.Connect(addr, dbus.WithContext(ctx))
	}}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()

	changed, err := d.NeedDaemonReload(ctx, []string{"sglang-dsv4-decode", "missing"})
	require.NoError(t, err)
	require.Empty(t, changed)
	sd.mu.Lock()
	sd.needReload = true
	sd.mu.Unlock()
	changed, err = d.NeedDaemonReload(ctx, []string{"sglang-dsv4-decode", "missing"})
	require.NoError(t, err)
	require.Equal(t, []string{"sglang-dsv4-decode.service"}, changed)

	require.NoError(t, d.DaemonReload(ctx))
	changed, err = d.NeedDaemonReload(ctx, []string{"sglang-dsv4-decode"})
	require.NoError(t, err)
	require.Empty(t, changed)
	sd.mu.Lock()
	require.Equal(t, 1, sd.reloads)
	sd.mu.Unlock()
	require.Equal(t, "D-Bus org.freedesktop.systemd1.Manager.Reload()", d.DaemonReloadCall())
}

// startBus runs a private dbus-daemon and returns its address.
func startBus(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("dbus-daemon")
	require.NoError(t, err, "dbus-daemon is needed: apt-get install dbus-daemon")
	dir := t.TempDir()
	conf := filepath.Join(dir, "bus.conf")
	require.NoError(t, os.WriteFile(conf, []byte(`<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path=`+filepath.Join(dir, "bus")+`</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
`), 0o644))
	cmd := exec.Command(bin, "--config-file="+conf, "--nofork", "--print-address=1")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	// Cleanups run last-registered first: the daemon is stopped before its
	// output is read.
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("dbus-daemon said: %s", stderr.String())
		}
	})
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	return strings.TrimSpace(line)
}

// fakeSystemd answers the few calls DBus makes, the way systemd does.
type fakeSystemd struct {
	conn *dbus.Conn

	mu         sync.Mutex
	result     string
	pid        uint32
	enter      time.Time
	jobs       uint32
	restart    []string
	needReload bool
	reloads    int
	gets       int
}

func startFakeSystemd(t *testing.T, addr string) *fakeSystemd {
	t.Helper()
	conn, err := dbus.Connect(addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	f := &fakeSystemd{conn: conn, result: "done", pid: 100, enter: time.Now().Add(-time.Hour)}
	require.NoError(t, conn.Export(f, "/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager"))
	require.NoError(t, conn.ExportSubtree(unitProperties{f}, "/org/freedesktop/systemd1/unit", "org.freedesktop.DBus.Properties"))
	reply, err := conn.RequestName("org.freedesktop.systemd1", dbus.NameFlagDoNotQueue)
	require.NoError(t, err)
	require.Equal(t, dbus.RequestNameReplyPrimaryOwner, reply)
	return f
}

func (f *fakeSystemd) setResult(r string) { f.mu.Lock(); f.result = r; f.mu.Unlock() }

func (f *fakeSystemd) calls() []string { f.mu.Lock(); defer f.mu.Unlock(); return f.restart }

// RestartUnit is the D-Bus method: it queues a job, replies with the job's
// path and then announces the job's end, as systemd does.
func (f *fakeSystemd) RestartUnit(name, mode string) (dbus.ObjectPath, *dbus.Error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if name != "sglang-dsv4-decode.service" {
		return "", dbus.NewError("org.freedesktop.systemd1.NoSuchUnit", []any{"Unit " + name + " not found."})
	}
	f.restart = append(f.restart, name+" "+mode)
	f.jobs++
	id, result := f.jobs, f.result
	job := dbus.ObjectPath(fmt.Sprintf("/org/freedesktop/systemd1/job/%d", id))
	if result == "done" {
		f.pid++
		f.enter = time.Now()
	}
	go func() {
		_ = f.conn.Emit("/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager.JobRemoved", id, job, name, result)
	}()
	return job, nil
}

// Reload is the D-Bus method behind `systemctl daemon-reload`.
func (f *fakeSystemd) Reload() *dbus.Error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reloads++
	f.needReload = false
	return nil
}

type unitProperties struct{ f *fakeSystemd }

// GetAll is org.freedesktop.DBus.Properties.GetAll for every unit path.
func (u unitProperties) GetAll(msg dbus.Message, iface string) (map[string]dbus.Variant, *dbus.Error) {
	path, _ := msg.Headers[dbus.FieldPath].Value().(dbus.ObjectPath)
	u.f.mu.Lock()
	defer u.f.mu.Unlock()
	if path == "/org/freedesktop/systemd1/unit/multi_2duser_2etarget" {
		// A loaded unit whose type has none of a service's properties.
		switch iface {
		case "org.freedesktop.systemd1.Unit":
			return map[string]dbus.Variant{
				"Id": dbus.MakeVariant("multi-user.target"), "LoadState": dbus.MakeVariant("loaded"), "ActiveState": dbus.MakeVariant("active"),
				"SubState": dbus.MakeVariant("active"), "ActiveEnterTimestamp": dbus.MakeVariant(uint64(u.f.enter.UnixMicro())),
			}, nil
		case "org.freedesktop.systemd1.Target":
			return map[string]dbus.Variant{}, nil
		}
	}
	if path != "/org/freedesktop/systemd1/unit/sglang_2ddsv4_2ddecode_2eservice" {
		if iface == "org.freedesktop.systemd1.Unit" {
			name := strings.TrimPrefix(string(path), "/org/freedesktop/systemd1/unit/")
			return map[string]dbus.Variant{
				"Id": dbus.MakeVariant(name), "LoadState": dbus.MakeVariant("not-found"), "ActiveState": dbus.MakeVariant("inactive"),
				"SubState": dbus.MakeVariant("dead"), "ActiveEnterTimestamp": dbus.MakeVariant(uint64(0)),
			}, nil
		}
		return nil, dbus.NewError("org.freedesktop.DBus.Error.UnknownInterface", []any{"Unknown interface " + iface})
	}
	switch iface {
	case "org.freedesktop.systemd1.Unit":
		return map[string]dbus.Variant{
			"Id":                   dbus.MakeVariant("sglang-dsv4-decode.service"),
			"LoadState":            dbus.MakeVariant("loaded"),
			"ActiveState":          dbus.MakeVariant("active"),
			"SubState":             dbus.MakeVariant("running"),
			"ActiveEnterTimestamp": dbus.MakeVariant(uint64(u.f.enter.UnixMicro())),
			"NeedDaemonReload":     dbus.MakeVariant(u.f.needReload),
		}, nil
	case "org.freedesktop.systemd1.Service":
		return map[string]dbus.Variant{
			"MainPID":        dbus.MakeVariant(u.f.pid),
			"NRestarts":      dbus.MakeVariant(uint32(0)),
			"ExecMainStatus": dbus.MakeVariant(int32(0)),
			"Result":         dbus.MakeVariant("success"),
		}, nil
	}
	return nil, dbus.NewError("org.freedesktop.DBus.Error.UnknownInterface", []any{"Unknown interface " + iface})
}

// Get is org.freedesktop.DBus.Properties.Get, answered from GetAll as
// systemd does, UnknownProperty included; it counts the calls.
func (u unitProperties) Get(msg dbus.Message, iface, prop string) (dbus.Variant, *dbus.Error) {
	all, err := u.GetAll(msg, iface)
	if err != nil {
		return dbus.Variant{}, err
	}
	u.f.mu.Lock()
	u.f.gets++
	u.f.mu.Unlock()
	v, ok := all[prop]
	if !ok {
		return dbus.Variant{}, dbus.NewError("org.freedesktop.DBus.Error.UnknownProperty", []any{"Unknown property " + prop})
	}
	return v, nil
}
