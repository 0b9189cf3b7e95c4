//go:build e2e

package e2e

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/remote"
	"github.com/runbot/runbot/test/e2e/testhost"
)

// TestUnitStateOverSystemdBus: on a systemd host reached as root, runbot
// reads unit state from systemd's D-Bus API through the SSH connection.
// What it reads is what `systemctl show` says, and reading it starts no
// process on the host, where each systemctl read starts a session's
// process and systemctl.
func TestUnitStateOverSystemdBus(t *testing.T) {
	c := testhost.Up(t, 1)
	h := c.Hosts[0]
	s, err := remote.NewSSH(remote.SSHConfig{
		Name: h.Name, Address: h.Address, Port: h.Port, User: h.User,
		IdentityFiles: []string{c.Key}, KnownHostsFiles: []string{c.KnownHosts},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() }) // the test is over; nothing to report
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	m := remote.SSHSystemd{SSH: s, Systemctl: remote.Systemctl{Runner: s}}

	c.Step(t, h, "D-Bus and systemctl agree on every unit of the deployment")
	missing, err := m.Show(ctx, "no-such-unit")
	require.NoError(t, err)
	require.Empty(t, s.SystemdBusRefused(), "the bus answered")
	require.Equal(t, "not-found", missing.LoadState)
	require.Equal(t, "inactive", missing.ActiveState)
	for _, unit := range testhost.Units {
		bus, err := m.Show(ctx, unit)
		require.NoError(t, err, unit)
		ctl, err := m.Systemctl.Show(ctx, unit)
		require.NoError(t, err, unit)
		require.Equal(t, ctl.ActiveState, bus.ActiveState, unit)
		require.Equal(t, ctl.SubState, bus.SubState, unit)
		require.Equal(t, ctl.LoadState, bus.LoadState, unit)
		require.Equal(t, ctl.Result, bus.Result, unit)
		require.Equal(t, ctl.MainPID, bus.MainPID, unit)
		require.Equal(t, ctl.NRestarts, bus.NRestarts, unit)
		require.Equal(t, ctl.ExecStatus, bus.ExecStatus, unit)
		// systemctl prints whole seconds; D-Bus has the microseconds.
		require.Equal(t, ctl.ActiveEnter, bus.ActiveEnter.Truncate(time.Second), unit)
		require.Empty(t, s.SystemdBusRefused(), "the bus answered")
		require.Equal(t, ctl.Props, bus.Props, unit)
	}
	st, err := m.Show(ctx, testhost.UnitDecode)
	require.NoError(t, err)
	require.Equal(t, "active", st.ActiveState)
	require.Positive(t, st.MainPID)

	c.Step(t, h, "twenty reads over D-Bus start no process on the host")
	lastPID := func() int {
		// The fifth field of /proc/loadavg is the newest pid.
		f := strings.Fields(h.Run(t, "cat /proc/loadavg"))
		require.Len(t, f, 5)
		n, err := strconv.Atoi(f[4])
		require.NoError(t, err)
		return n
	}
	before := lastPID()
	for range 20 {
		_, err := m.Show(ctx, testhost.UnitDecode)
		require.NoError(t, err)
	}
	bus := lastPID() - before
	before = lastPID()
	for range 20 {
		_, err := m.Systemctl.Show(ctx, testhost.UnitDecode)
		require.NoError(t, err)
	}
	ctl := lastPID() - before
	t.Logf("pids used by 20 reads: %d over D-Bus, %d with systemctl", bus, ctl)
	// Each lastPID costs a few pids of its own (its session and cat), and
	// the deployment may start a thread now and then; each systemctl read
	// starts at least two processes (the session's and systemctl).
	require.Less(t, bus, 10, "pids used by 20 D-Bus reads")
	require.GreaterOrEqual(t, ctl, 40, "pids used by 20 systemctl reads")
}
