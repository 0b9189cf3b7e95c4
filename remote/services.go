package remote

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ServiceManager starts, stops and inspects the services (units) of one host.
// systemd is the default; hosts that run their services some other way (the
// simulator's ctl, supervisord, docker) configure commands instead.
type ServiceManager interface {
	Show(ctx context.Context, unit string) (UnitState, error)
	Restart(ctx context.Context, unit string) error
	// RestartCall describes, for plans, the command or call Restart(unit)
	// makes, so that what is approved is what runs.
	RestartCall(unit string) string
}

// UnitFileReloader is a ServiceManager that reads unit files and drop-ins
// from disk, as systemd does, and can be told to read them again. Managers
// without unit files (Commands) do not implement it.
type UnitFileReloader interface {
	ServiceManager
	// NeedDaemonReload lists those of units whose files changed on disk
	// since the manager last read them.
	NeedDaemonReload(ctx context.Context, units []string) ([]string, error)
	// DaemonReload makes the manager read every unit file again, like
	// `systemctl daemon-reload`.
	DaemonReload(ctx context.Context) error
	// DaemonReloadCall describes, for plans, the command or call
	// DaemonReload makes.
	DaemonReloadCall() string
}

// The service managers and what they can do.
var (
	_ UnitFileReloader = Systemctl{}
	_ UnitFileReloader = (*DBus)(nil)
	_ ServiceManager   = Commands{}
)

// UnitState is the subset of `systemctl show` that diagnoses and actions use.
type UnitState struct {
	Unit        string
	ActiveState string
	SubState    string
	LoadState   string
	Result      string
	MainPID     int
	NRestarts   int
	ExecStatus  int
	ActiveEnter time.Time
	// Props holds every property that was printed, by name.
	Props map[string]string
}

// ShowProperties are the properties runbot asks systemd for.
var ShowProperties = []string{
	"Id", "LoadState", "ActiveState", "SubState", "Result", "MainPID",
	"NRestarts", "ExecMainStatus", "ActiveEnterTimestamp",
}

// ParseShow reads `systemctl show` KEY=VALUE output.
func ParseShow(unit string, out []byte) (UnitState, error) {
	st := UnitState{Unit: unit, Props: map[string]string{}}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if !ok {
			continue
		}
		st.Props[k] = v
	}
	if len(st.Props) == 0 {
		return st, fmt.Errorf("read state of unit %s: no properties in output %q", unit, truncate(out, 200))
	}
	st.ActiveState = st.Props["ActiveState"]
	st.SubState = st.Props["SubState"]
	st.LoadState = st.Props["LoadState"]
	st.Result = st.Props["Result"]
	st.MainPID, _ = strconv.Atoi(st.Props["MainPID"])
	st.NRestarts, _ = strconv.Atoi(st.Props["NRestarts"])
	st.ExecStatus, _ = strconv.Atoi(st.Props["ExecMainStatus"])
	if ts := st.Props["ActiveEnterTimestamp"]; ts != "" {
		st.ActiveEnter, _ = ParseSystemdTime(ts)
	}
	return st, nil
}

// ParseSystemdTime parses systemd's human timestamp, e.g.
// "Thu 2026-06-18 20:38:03 UTC".
func ParseSystemdTime(s string) (time.Time, error) {
	for _, layout := range []string{"Mon 2006-01-02 15:04:05 MST", "Mon 2006-01-02 15:04:05.000000 MST", "2006-01-02 15:04:05 MST"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("parse systemd timestamp %q: unknown layout", s)
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
