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
	"github.com/runbot/runbot/remote/sshrun"
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
	s := sshTo(t, c, h)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	m := sshrun.Systemd{SSH: s, Systemctl: remote.Systemctl{Runner: s}}

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
	lastPID := func() int { return newestPID(t, h) }
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
	// starts at least the session's process, in which the login shell
	// execs systemctl.
	require.Less(t, bus, 10, "pids used by 20 D-Bus reads")
	require.GreaterOrEqual(t, ctl, 20, "pids used by 20 systemctl reads")

	c.Step(t, h, "after systemd re-executes, the next read connects to the bus again")
	// The reads share one kept bus connection, which a daemon-reexec
	// closes.
	h.Run(t, "systemctl daemon-reexec")
	st, err = m.Show(ctx, testhost.UnitDecode)
	require.NoError(t, err)
	require.Equal(t, "active", st.ActiveState)
	require.Empty(t, s.SystemdBusRefused(), "still over D-Bus")
	before = lastPID()
	_, err = m.Show(ctx, testhost.UnitDecode)
	require.NoError(t, err)
	require.Less(t, lastPID()-before, 3, "the read after the reconnect went over D-Bus too")
}

// BenchmarkUnitStateRead reads the decode unit's state on a test host
// over D-Bus and with systemctl, alternating, on one open SSH connection,
// and reports each way's wall time and the host's CPU (its cgroup's
// usage) per read, so that both meet the same load:
//
//	go test -tags e2e -run '^$' -bench UnitStateRead -benchtime 200x ./test/e2e
func BenchmarkUnitStateRead(b *testing.B) {
	c := testhost.Up(b, 1)
	h := c.Hosts[0]
	s := sshTo(b, c, h)
	m := sshrun.Systemd{SSH: s, Systemctl: remote.Systemctl{Runner: s}}
	ctx := b.Context()
	_, err := m.Show(ctx, testhost.UnitDecode) // dial, and learn that the bus answers
	require.NoError(b, err)
	require.Empty(b, s.SystemdBusRefused())
	show := func(sm remote.ServiceManager) func() {
		return func() {
			_, err := sm.Show(ctx, testhost.UnitDecode)
			require.NoError(b, err)
		}
	}
	wall, cpu, counts := alternate(b, hostsUsage(b, []*testhost.Host{h}), show(m), show(m.Systemctl))
	if counts[1] == 0 {
		return // a probe run of one iteration: nothing to compare
	}
	bus, ctl := float64(counts[0]), float64(counts[1])
	b.ReportMetric(float64(wall[0].Microseconds())/bus/1000, "dbus-ms/read")
	b.ReportMetric(float64(wall[1].Microseconds())/ctl/1000, "systemctl-ms/read")
	b.ReportMetric(float64(cpu[0].Microseconds())/bus/1000, "dbus-host-cpu-ms/read")
	b.ReportMetric(float64(cpu[1].Microseconds())/ctl/1000, "systemctl-host-cpu-ms/read")
}

// sshTo is runbot's SSH runner for a test host, as the inventory
// describes it, closed when tb ends.
func sshTo(tb testing.TB, c *testhost.Cluster, h *testhost.Host) *sshrun.Runner {
	tb.Helper()
	s, err := sshrun.New(sshrun.Config{
		Name: h.Name, Address: h.Address, Port: h.Port, User: h.User,
		IdentityFiles: []string{c.Key}, KnownHostsFiles: []string{c.KnownHosts},
	})
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = s.Close() }) // the test is over; nothing to report
	return s
}

// newestPID is the newest pid on h, the fifth field of its /proc/loadavg,
// so that the difference of two readings counts the processes started in
// between (the reading's own included).
func newestPID(t *testing.T, h *testhost.Host) int {
	t.Helper()
	f := strings.Fields(h.Run(t, "cat /proc/loadavg"))
	require.Len(t, f, 5)
	n, err := strconv.Atoi(f[4])
	require.NoError(t, err)
	return n
}
