package remote

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	sdbus "github.com/coreos/go-systemd/v22/dbus"
	godbus "github.com/godbus/dbus/v5"
)

// DBus manages the units of the machine runbot itself runs on through
// systemd's D-Bus API, for when the bot runs on the host it remediates.
//
// Every call opens its own connection under the call's context and closes
// it at the end: the D-Bus library ties a connection's life to the context
// it was opened with, and a connection that outlived a daemon-reexec would
// fail anyway. A restart or a state read is rare enough that the extra
// connect costs nothing worth saving.
type DBus struct {
	// Name is how errors name this host; "localhost" when empty.
	Name string
	// Connect opens one authenticated connection to systemd's bus; nil
	// means the system bus. A state read uses one; a restart, which waits
	// for systemd's job signal, two. Each is closed after its call.
	Connect func(ctx context.Context) (*godbus.Conn, error)
}

// JobError says systemd finished a unit's job with a result other than
// "done": "failed" (the unit did not start, e.g. it hit its start limit),
// "canceled", "timeout", "dependency" or "skipped".
type JobError struct {
	Host   string
	Unit   string
	Job    string
	Result string
}

func (e *JobError) Error() string {
	return fmt.Sprintf("%s unit %s on %s: systemd's job ended %q", e.Job, e.Unit, e.Host, e.Result)
}

// Show implements ServiceManager. It reads the unit's properties and, for
// unit types that have them (a service's MainPID, NRestarts and Result),
// those of its type too.
func (d *DBus) Show(ctx context.Context, unit string) (UnitState, error) {
	conn, err := d.dial(ctx)
	if err != nil {
		return UnitState{}, fmt.Errorf("show unit %s on %s: %w", UnitName(unit), d.host(), err)
	}
	defer func() { _ = conn.Close() }() // the read is done; a close error changes nothing
	return ShowUnitOnBus(ctx, conn, nil, d.host(), unit)
}

// ShowUnitOnBus reads a unit's state over conn: the ShowProperties, each with
// its own Properties.Get, all sent before the first answer is awaited, so
// that the read costs one round trip. It does not ask for all of them
// (GetAll): that reply carries some 300 properties, among them the cgroup
// counters systemd reads from the kernel to answer, and cost PID 1 and
// runbot several times what the nine properties runbot keeps do.
//
// When writes is conn's transport, the calls are held back and sent in one
// write (see HeldWrites); nil sends each as it is made.
func ShowUnitOnBus(ctx context.Context, conn *godbus.Conn, writes *HeldWrites, host, unit string) (UnitState, error) {
	name := UnitName(unit)
	iface := unitInterface(name)
	obj := conn.Object("org.freedesktop.systemd1", godbus.ObjectPath("/org/freedesktop/systemd1/unit/"+sdbus.PathBusEscape(name)))
	type ask struct {
		prop string
		call *godbus.Call
	}
	asks := make([]ask, 0, len(unitIfaceProperties)+len(typeIfaceProperties))
	get := func(iface, prop string) {
		// Buffered, so that the library never waits on a reply nobody reads
		// after an early return.
		call := obj.GoWithContext(ctx, "org.freedesktop.DBus.Properties.Get", 0, make(chan *godbus.Call, 1), iface, prop)
		asks = append(asks, ask{prop: prop, call: call})
	}
	if writes != nil {
		writes.Hold()
	}
	for _, prop := range unitIfaceProperties {
		get("org.freedesktop.systemd1.Unit", prop)
	}
	if iface != "" {
		for _, prop := range typeIfaceProperties {
			get("org.freedesktop.systemd1."+iface, prop)
		}
	}
	if writes != nil {
		if err := writes.Release(); err != nil {
			return UnitState{}, fmt.Errorf("show unit %s on %s: send the reads: %w", name, host, err)
		}
	}
	values := make([]any, len(asks))
	errs := make([]error, len(asks))
	for i, a := range asks {
		select {
		case <-a.call.Done:
		case <-ctx.Done():
			return UnitState{}, fmt.Errorf("show unit %s on %s: %w", name, host, context.Cause(ctx))
		}
		var v godbus.Variant
		if errs[i] = a.call.Store(&v); errs[i] == nil {
			values[i] = v.Value()
		}
	}
	unitProps := make(map[string]any, len(unitIfaceProperties))
	typeProps := make(map[string]any, len(typeIfaceProperties))
	for i, a := range asks[:len(unitIfaceProperties)] {
		if errs[i] != nil {
			return UnitState{}, fmt.Errorf("show unit %s on %s: read %s: %w", name, host, a.prop, errs[i])
		}
		unitProps[a.prop] = values[i]
	}
	// A unit systemd has no file for still answers on its type's
	// interface, with defaults that mean nothing; systemctl prints them,
	// runbot leaves them out, as before.
	if unitProps["LoadState"] != "not-found" {
		for i := len(unitIfaceProperties); i < len(asks); i++ {
			switch {
			case errs[i] == nil:
				typeProps[asks[i].prop] = values[i]
			case !absentProperty(errs[i]):
				return UnitState{}, fmt.Errorf("show unit %s on %s: read its %s property %s: %w", name, host, iface, asks[i].prop, errs[i])
			}
		}
	}
	return unitStateFromProperties(name, unitProps, typeProps), nil
}

// unitIfaceProperties and typeIfaceProperties are the ShowProperties on
// systemd's Unit interface and on the interface of the unit's type
// (Service for a service), where a unit of another type may lack some.
var (
	unitIfaceProperties = []string{"Id", "LoadState", "ActiveState", "SubState", "ActiveEnterTimestamp"}
	typeIfaceProperties = []string{"Result", "MainPID", "NRestarts", "ExecMainStatus"}
)

// absentProperty says a Properties.Get failed only because the unit's
// type has no such property (a target has no MainPID) or no interface.
func absentProperty(err error) bool {
	var de godbus.Error
	return errors.As(err, &de) &&
		(de.Name == "org.freedesktop.DBus.Error.UnknownProperty" || de.Name == "org.freedesktop.DBus.Error.UnknownInterface")
}

// Restart implements ServiceManager. Like `systemctl restart`, it waits
// until systemd's restart job has finished, and reports a job that did not
// end "done" as a *JobError.
func (d *DBus) Restart(ctx context.Context, unit string) error {
	name := UnitName(unit)
	conn, err := d.connect(ctx)
	if err != nil {
		return fmt.Errorf("restart unit %s on %s: %w", name, d.host(), err)
	}
	defer conn.Close()
	// Buffered, so the library's signal loop never blocks on a result that
	// arrives after the context ended and nobody reads it.
	done := make(chan string, 1)
	if _, err := conn.RestartUnitContext(ctx, name, "replace", done); err != nil {
		return fmt.Errorf("restart unit %s on %s: %w", name, d.host(), err)
	}
	select {
	case result := <-done:
		if result != "done" {
			return &JobError{Host: d.host(), Unit: name, Job: "restart", Result: result}
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("restart unit %s on %s: waiting for systemd's job to finish: %w", name, d.host(), context.Cause(ctx))
	}
}

// RestartCall implements ServiceManager.
func (d *DBus) RestartCall(unit string) string {
	return fmt.Sprintf("D-Bus org.freedesktop.systemd1.Manager.RestartUnit(%q, \"replace\")", UnitName(unit))
}

// NeedDaemonReload implements UnitFileReloader: it reads each unit's
// NeedDaemonReload property.
func (d *DBus) NeedDaemonReload(ctx context.Context, units []string) ([]string, error) {
	if len(units) == 0 {
		return nil, nil
	}
	conn, err := d.connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("read NeedDaemonReload on %s: %w", d.host(), err)
	}
	defer conn.Close()
	var changed []string
	for _, u := range units {
		name := UnitName(u)
		props, err := conn.GetUnitPropertiesContext(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("read NeedDaemonReload of %s on %s: %w", name, d.host(), err)
		}
		if need, _ := props["NeedDaemonReload"].(bool); need {
			changed = append(changed, name)
		}
	}
	return changed, nil
}

// DaemonReload implements UnitFileReloader. Like `systemctl
// daemon-reload`, it returns once systemd has reloaded.
func (d *DBus) DaemonReload(ctx context.Context) error {
	conn, err := d.connect(ctx)
	if err != nil {
		return fmt.Errorf("reload systemd on %s: %w", d.host(), err)
	}
	defer conn.Close()
	if err := conn.ReloadContext(ctx); err != nil {
		return fmt.Errorf("reload systemd on %s: %w", d.host(), err)
	}
	return nil
}

// DaemonReloadCall implements UnitFileReloader.
func (d *DBus) DaemonReloadCall() string { return "D-Bus org.freedesktop.systemd1.Manager.Reload()" }

// connect opens go-systemd's connection, which waits for job signals on a
// second one. Its only errors are dial's, which say what failed.
func (d *DBus) connect(ctx context.Context) (*sdbus.Conn, error) {
	return sdbus.NewConnection(func() (*godbus.Conn, error) { return d.dial(ctx) })
}

// dial opens one authenticated connection to systemd's bus.
func (d *DBus) dial(ctx context.Context) (*godbus.Conn, error) {
	if d.Connect != nil {
		return d.Connect(ctx)
	}
	conn, err := godbus.SystemBusPrivate(godbus.WithContext(ctx))
	if err == nil {
		if err = conn.Auth(nil); err == nil {
			err = conn.Hello()
		}
		if err != nil {
			_ = conn.Close() // the handshake failed; that is the error to report
		}
	}
	if err != nil {
		return nil, fmt.Errorf("connect to systemd over the system bus: %w", err)
	}
	return conn, nil
}

func (d *DBus) host() string {
	if d.Name == "" {
		return "localhost"
	}
	return d.Name
}

// unitTypes are systemd's unit types, by name suffix.
var unitTypes = []string{"service", "socket", "target", "device", "mount", "automount", "swap", "timer", "path", "slice", "scope"}

// UnitName completes a bare name the way systemctl does: "decode" means
// "decode.service". Unlike systemctl, the D-Bus API takes names literally.
func UnitName(unit string) string {
	if i := strings.LastIndexByte(unit, '.'); i >= 0 && slices.Contains(unitTypes, unit[i+1:]) {
		return unit
	}
	return unit + ".service"
}

// unitInterface is the D-Bus interface suffix holding the type-specific
// properties of a unit ("Service" for x.service).
func unitInterface(name string) string {
	i := strings.LastIndexByte(name, '.')
	if i < 0 {
		return ""
	}
	t := name[i+1:]
	switch t {
	case "automount":
		return "Automount"
	case "service", "socket", "target", "device", "mount", "swap", "timer", "path", "slice", "scope":
		return strings.ToUpper(t[:1]) + t[1:]
	}
	return ""
}

// unitStateFromProperties maps D-Bus properties, typed as the D-Bus
// library decodes them, onto a UnitState. Props holds every property as
// `systemctl show` would print it, so callers that read Props see the same
// text from D-Bus as from systemctl; timestamps are exact rather than
// parsed back from text.
func unitStateFromProperties(unit string, unitProps, typeProps map[string]any) UnitState {
	st := UnitState{Unit: unit, Props: make(map[string]string, len(unitProps)+len(typeProps))}
	for _, m := range []map[string]any{unitProps, typeProps} {
		for k, v := range m {
			st.Props[k] = propertyText(k, v)
		}
	}
	str := func(k string) string { s, _ := lookup(k, unitProps, typeProps).(string); return s }
	st.ActiveState = str("ActiveState")
	st.SubState = str("SubState")
	st.LoadState = str("LoadState")
	st.Result = str("Result")
	st.MainPID = int(asInt64(lookup("MainPID", unitProps, typeProps)))
	st.NRestarts = int(asInt64(lookup("NRestarts", unitProps, typeProps)))
	st.ExecStatus = int(asInt64(lookup("ExecMainStatus", unitProps, typeProps)))
	if us := asInt64(lookup("ActiveEnterTimestamp", unitProps, typeProps)); us > 0 {
		st.ActiveEnter = time.UnixMicro(us)
	}
	return st
}

func lookup(k string, maps ...map[string]any) any {
	for _, m := range maps {
		if v, ok := m[k]; ok {
			return v
		}
	}
	return nil
}

func asInt64(v any) int64 {
	switch x := v.(type) {
	case int32:
		return int64(x)
	case uint32:
		return int64(x)
	case int64:
		return x
	case uint64:
		return int64(x)
	case int:
		return int64(x)
	case uint16:
		return int64(x)
	case int16:
		return int64(x)
	case uint8:
		return int64(x)
	}
	return 0
}

// propertyText renders a property value the way `systemctl show` does for
// the common types: yes/no for booleans, decimal numbers, space-separated
// lists, and timestamps (microseconds since the epoch) as systemd's local
// time text, empty when unset.
func propertyText(name string, v any) string {
	switch x := v.(type) {
	case string:
		return x
	case bool:
		if x {
			return "yes"
		}
		return "no"
	case uint64:
		if strings.HasSuffix(name, "Timestamp") {
			if x == 0 {
				return ""
			}
			return time.UnixMicro(int64(x)).Format("Mon 2006-01-02 15:04:05 MST")
		}
		return strconv.FormatUint(x, 10)
	case int32, uint32, int64, int, uint16, int16, uint8:
		return strconv.FormatInt(asInt64(x), 10)
	case []string:
		return strings.Join(x, " ")
	}
	return fmt.Sprint(v)
}
