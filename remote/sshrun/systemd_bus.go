package sshrun

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	godbus "github.com/godbus/dbus/v5"
	"github.com/runbot/runbot/remote"
	"golang.org/x/crypto/ssh"
)

// SystemdPrivateBus is systemd's own D-Bus socket: it answers root without
// a bus daemon, which many servers do not run.
const SystemdPrivateBus = "/run/systemd/private"

// Systemd is the service manager of a systemd host reached over SSH. It
// reads unit state from systemd's D-Bus API through the SSH connection (a
// forwarded unix socket to SystemdPrivateBus), which starts no process on
// the host: a `systemctl show` costs the host a process and some 20 ms of
// CPU, a D-Bus read a fraction of a millisecond of PID 1's. Where the bus
// cannot be reached (sshd refuses to forward unix sockets, or the login is
// not root, which systemd's private bus refuses), it reads with systemctl,
// as Systemctl does, and keeps doing so for that runner. Changes (restart,
// daemon-reload) always go through systemctl, so that a plan shows, and is
// approved for, the command that runs.
type Systemd struct {
	// SSH carries the D-Bus connection.
	SSH *Runner
	// Systemctl makes the changes and is the fallback for reads; its
	// Runner may be a Shell over SSH.
	Systemctl remote.Systemctl
}

// busRefusal records that a host's systemd bus could not be reached, and
// why, so that later reads go to systemctl at once.
type busRefusal struct{ why atomic.Pointer[string] }

func (b *busRefusal) refused() bool { return b.why.Load() != nil }

func (b *busRefusal) refuse(err error) {
	why := err.Error()
	b.why.CompareAndSwap(nil, &why)
}

// SystemdBusRefused says why reads of this host's unit state go through
// systemctl rather than D-Bus; empty while D-Bus works or was not tried.
func (s *Runner) SystemdBusRefused() string {
	if p := s.bus.why.Load(); p != nil {
		return *p
	}
	return ""
}

// Show implements ServiceManager: over D-Bus when the host allows it,
// else with systemctl. Both give the same UnitState, Props included.
func (m Systemd) Show(ctx context.Context, unit string) (remote.UnitState, error) {
	// A kept connection that systemd closed since (a daemon-reexec, a
	// restart of PID 1's bus) is replaced once, at once.
	for attempt := 0; attempt < 2 && !m.SSH.bus.refused(); attempt++ {
		bus, conn, err := m.SSH.keptBus(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return remote.UnitState{}, fmt.Errorf("show unit %s on %s: %w", remote.UnitName(unit), m.SSH.Host(), err)
			}
			break // the bus could not be reached; systemctl may still work
		}
		st, err := remote.ShowUnitOnBus(ctx, bus.conn, bus.writes, m.SSH.Host(), unit)
		m.SSH.done(conn)
		if err == nil {
			return showPropertiesOnly(st), nil
		}
		if bus.conn.Connected() || ctx.Err() != nil {
			return st, err
		}
		bus.broken.Store(true)
	}
	return m.Systemctl.Show(ctx, unit)
}

// Restart implements ServiceManager with systemctl.
func (m Systemd) Restart(ctx context.Context, unit string) error {
	return m.Systemctl.Restart(ctx, unit)
}

// RestartCall implements ServiceManager.
func (m Systemd) RestartCall(unit string) string { return m.Systemctl.RestartCall(unit) }

// NeedDaemonReload implements UnitFileReloader with systemctl.
func (m Systemd) NeedDaemonReload(ctx context.Context, units []string) ([]string, error) {
	return m.Systemctl.NeedDaemonReload(ctx, units)
}

// DaemonReload implements UnitFileReloader with systemctl.
func (m Systemd) DaemonReload(ctx context.Context) error { return m.Systemctl.DaemonReload(ctx) }

// DaemonReloadCall implements UnitFileReloader.
func (m Systemd) DaemonReloadCall() string { return m.Systemctl.DaemonReloadCall() }

// showPropertiesOnly keeps the properties `systemctl show -p
// ShowProperties` prints, so that evidence and recordings do not depend on
// which way the state was read (only ActiveEnter is finer: systemctl
// prints whole seconds, D-Bus has microseconds).
func showPropertiesOnly(st remote.UnitState) remote.UnitState {
	props := make(map[string]string, len(remote.ShowProperties))
	for _, k := range remote.ShowProperties {
		if v, ok := st.Props[k]; ok {
			props[k] = v
		}
	}
	st.Props = props
	// ParseShow reads systemctl's times as UTC; D-Bus gives the local
	// zone. The instant is the same, and so is now its text.
	st.ActiveEnter = st.ActiveEnter.UTC()
	return st
}

// busSession is an SSH connection's kept connection to systemd, opened
// once: a new one costs PID 1 an authentication and the connection a
// forwarded channel, several times what a read costs.
type busSession struct {
	ready chan struct{} // closed once conn or err is set
	conn  *godbus.Conn
	// writes is conn's transport, whose writes a read holds back and sends
	// at once.
	writes *remote.HeldWrites
	err    error
	broken atomic.Bool
}

// keptBus returns the connection's systemd bus, connecting on first use;
// concurrent callers share one connect, each waiting no longer than its
// ctx. On success the SSH connection is in use until the caller calls
// s.done on it.
func (s *Runner) keptBus(ctx context.Context) (*busSession, *liveConn, error) {
	conn, err := s.use(ctx)
	if err != nil {
		return nil, nil, err
	}
	conn.busMu.Lock()
	b := conn.bus
	if b == nil || b.broken.Load() {
		if b != nil && b.conn != nil {
			_ = b.conn.Close() // it broke already; closing frees what is left
		}
		b = &busSession{ready: make(chan struct{})}
		conn.bus = b
		go func() {
			defer close(b.ready)
			b.conn, b.writes, b.err = s.systemdBus(conn)
			if b.err != nil {
				b.broken.Store(true)
			}
		}()
	}
	conn.busMu.Unlock()
	select {
	case <-b.ready:
		if b.err != nil {
			s.done(conn)
			return nil, nil, b.err
		}
		return b, conn, nil
	case <-ctx.Done():
		s.done(conn)
		return nil, nil, context.Cause(ctx)
	}
}

// systemdBus opens a connection to the host's systemd over conn: one
// forwarded unix socket, authenticated as the login's uid (reads need no
// second one for signals, as go-systemd's connections have). A failure
// that will not go away (forwarding refused, the socket missing,
// authentication refused) is remembered, so the next read goes to
// systemctl without trying.
func (s *Runner) systemdBus(conn *liveConn) (*godbus.Conn, *remote.HeldWrites, error) {
	if s.cfg.User != "root" {
		// The private bus answers root only.
		err := fmt.Errorf("systemd's private bus answers root only, and the login is %q", s.cfg.User)
		s.bus.refuse(err)
		return nil, nil, err
	}
	bus, writes, err := dialSystemdBus(conn)
	if err != nil {
		err = fmt.Errorf("connect to systemd on %s over ssh (%s): %w", s.Host(), SystemdPrivateBus, err)
		var refused *ssh.OpenChannelError
		var authErr *busAuthError
		if errors.As(err, &refused) || errors.As(err, &authErr) {
			s.bus.refuse(err)
		}
		return nil, nil, err
	}
	return bus, writes, nil
}

// busAuthError says the bus refused the login's credentials.
type busAuthError struct{ err error }

func (e *busAuthError) Error() string { return "systemd's bus refused the login: " + e.err.Error() }
func (e *busAuthError) Unwrap() error { return e.err }

// busDialTimeout bounds opening a forwarded channel to the bus and the
// D-Bus authentication handshake, which take no context.
const busDialTimeout = 10 * time.Second

// dialSystemdBus opens one connection to systemd's private bus through
// conn. It lives as long as the SSH connection, or until it breaks.
func dialSystemdBus(conn *liveConn) (*godbus.Conn, *remote.HeldWrites, error) {
	ctx, cancel := context.WithTimeout(context.Background(), busDialTimeout)
	defer cancel()
	nc, err := conn.client.DialContext(ctx, "unix", SystemdPrivateBus)
	if err != nil {
		return nil, nil, err
	}
	tc := &remote.HeldWrites{Conn: withDeadlines(nc)}
	_ = tc.SetDeadline(time.Now().Add(busDialTimeout)) // a pipe end: SetDeadline cannot fail
	bc, err := godbus.NewConn(remote.NewBufferedReads(tc))
	if err != nil {
		_ = tc.Close() // the dial failed; nothing else to report
		return nil, nil, err
	}
	if err := bc.Auth([]godbus.Auth{godbus.AuthExternal("0")}); err != nil {
		_ = bc.Close() // authentication failed; the close changes nothing
		return nil, nil, &busAuthError{err: err}
	}
	_ = tc.SetDeadline(time.Time{}) // from here each call carries its context
	return bc, tc, nil
}
