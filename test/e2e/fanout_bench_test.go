//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/inventory"
	"github.com/runbot/runbot/remote/sshrun"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/bind"
	"github.com/runbot/runbot/runbooks/engine"
	"github.com/runbot/runbot/runbooks/record"
	"github.com/runbot/runbot/store"
	"github.com/runbot/runbot/test/e2e/testhost"
)

// auditCommands are the five shell commands of bench/fanout/run.sh's fleet
// audit, which the peers run joined into one line.
var auditCommands = []string{
	"systemctl is-active sglang-dsv4-prefill sglang-dsv4-decode sglang-dsv4-router",
	"journalctl -u sglang-dsv4-decode -n 200 --no-pager -q | grep -c 'Decode batch' || true",
	"cat /proc/loadavg",
	`tr '\0' ' ' < /proc/$(systemctl show -p MainPID --value sglang-dsv4-decode)/cmdline | grep -c -- --disable-overlap-schedule || true`,
	"grep -- --disaggregation-transfer-backend /root/serve_dsv4_decode.sh",
}

// BenchmarkFanoutWarm is the fleet audit of bench/fanout/run.sh run again
// and again by processes that keep their connections, as a scheduled audit
// is: runbot's engine over one sshrun.Pool (what `runbot serve` keeps), its
// runs recorded in SQLite, against OpenSSH with a ControlPersist master per
// host (the strongest setup a repeated ssh audit has: Ansible's default),
// the five commands joined into one line. The two alternate, so that both
// meet the same load; each reports its wall time and the hosts' CPU (their
// cgroups) per audit of the whole fleet:
//
//	go test -tags e2e -run '^$' -bench FanoutWarm -benchtime 10x ./test/e2e
func BenchmarkFanoutWarm(b *testing.B) {
	c := testhost.Up(b, 50)
	for _, n := range []int{20, 50} {
		b.Run(fmt.Sprintf("hosts=%d", n), func(b *testing.B) {
			hosts := c.Hosts[:n]
			audit := newWarmAudit(b, c, hosts)
			peer := newPersistentSSH(b, c, hosts)
			ctx := b.Context()
			// One of each first: connections, SFTP and D-Bus sessions
			// open, the masters up, the hosts' page cache warm.
			audit.run(b, ctx)
			peer.run(b, ctx)
			wall, cpu, counts := alternate(b, hostsUsage(b, hosts), func() { audit.run(b, ctx) }, func() { peer.run(b, ctx) })
			runs, peers := float64(counts[0]), float64(counts[1])
			if peers == 0 {
				return // a probe run of one iteration: nothing to compare
			}
			b.ReportMetric(float64(wall[0].Microseconds())/runs/1000, "runbot-ms/audit")
			b.ReportMetric(float64(wall[1].Microseconds())/peers/1000, "ssh-persist-ms/audit")
			b.ReportMetric(float64(cpu[0].Microseconds())/runs/1000/float64(n), "runbot-host-cpu-ms/host")
			b.ReportMetric(float64(cpu[1].Microseconds())/peers/1000/float64(n), "ssh-persist-host-cpu-ms/host")
			b.ReportMetric((float64(wall[1])/peers)/(float64(wall[0])/runs), "ssh-persist/runbot")
		})
	}
}

// warmAudit is runbot's native audit of the fleet, prepared once, run by
// one engine whose pool keeps every host's connection between runs.
type warmAudit struct {
	eng   *engine.Engine
	p     *engine.Prepared
	st    store.Runs
	steps int
}

func newWarmAudit(b *testing.B, c *testhost.Cluster, hosts []*testhost.Host) *warmAudit {
	b.Helper()
	dir := b.TempDir()
	raw, err := os.ReadFile(c.Inventory)
	require.NoError(b, err)
	head, _, ok := strings.Cut(string(raw), "\ndeployments:")
	require.True(b, ok, "the test hosts' inventory has a deployments section")
	var inv, targets strings.Builder
	inv.WriteString(head + "\ndeployments:\n  fleet:\n    roles:\n")
	for i, h := range hosts {
		fmt.Fprintf(&inv, "      %s: {host: %s}\n", h.Name, h.Name)
		if i > 0 {
			targets.WriteString(", ")
		}
		targets.WriteString(h.Name)
	}
	invPath := filepath.Join(dir, "inventory.yaml")
	require.NoError(b, os.WriteFile(invPath, []byte(inv.String()), 0o600))
	loaded, err := inventory.Load(invPath)
	require.NoError(b, err)

	// The same runbook bench/fanout/run.sh writes for runbot-native.
	t := targets.String()
	rb := "name: fleet-audit-native\nparams: {deployment: {type: deployment, required: true}}\nsteps:\n"
	for _, u := range []string{"prefill", "decode", "router"} {
		rb += fmt.Sprintf("  - {id: %s, check: unit_state, target: [%s], with: {unit: sglang-dsv4-%s}}\n", u, t, u)
	}
	rb += fmt.Sprintf("  - {id: batches, check: log_progress, target: [%s], with: {unit: sglang-dsv4-decode, progress: 'Decode batch'}}\n", t)
	rb += fmt.Sprintf("  - {id: load, check: read_file, target: [%s], with: {path: /proc/loadavg}}\n", t)
	rb += fmt.Sprintf("  - {id: overlap, check: flag, target: [%s], with: {flag: --disable-overlap-schedule, unit: sglang-dsv4-decode, script: /root/serve_dsv4_decode.sh}}\n", t)
	rb += fmt.Sprintf("  - {id: backend, check: grep_config, target: [%s], with: {files: [/root/serve_dsv4_decode.sh], extract: {transfer_backend: '--disaggregation-transfer-backend[= ](\\S+)'}}}\n", t)
	rbPath := filepath.Join(dir, "audit.yaml")
	require.NoError(b, os.WriteFile(rbPath, []byte(rb), 0o600))
	book, problems, err := runbooks.LoadFile(rbPath)
	require.NoError(b, err)
	require.NotNil(b, book, "runbook problems: %v", problems)

	pool := sshrun.NewPool()
	b.Cleanup(func() { _ = pool.Close() }) // the benchmark is over
	eng := &engine.Engine{Targets: &bind.InventoryTargets{Inventory: loaded, Runners: &bind.PoolRunners{Inventory: loaded, Pool: pool}}}
	p, err := eng.Prepare(b.Context(), book, map[string]string{"deployment": "fleet"})
	require.NoError(b, err)
	st, err := store.Open(b.Context(), filepath.Join(dir, "runbot.db"))
	require.NoError(b, err)
	b.Cleanup(func() { _ = st.Close() })
	return &warmAudit{eng: eng, p: p, st: st, steps: 7 * len(hosts)}
}

// run audits the fleet once and checks what every step read, as
// bench/fanout/run.sh's verify_native does.
func (a *warmAudit) run(b *testing.B, ctx context.Context) {
	b.Helper()
	rep, err := record.RunAndRecord(ctx, a.eng, a.st, a.p, engine.RunOptions{Trigger: "schedule"}, "bench")
	require.NoError(b, err)
	require.Len(b, rep.Steps, a.steps)
	for _, s := range rep.Steps {
		require.Equal(b, "ok", string(s.Status), "%s on %s: %s", s.Step, s.Target, s.Error)
	}
}

// persistentSSH runs the joined audit line over one ControlPersist master
// per host, started before the first run and stopped at the end.
type persistentSSH struct {
	hosts  []*testhost.Host
	args   func(h *testhost.Host) []string
	joined string
}

func newPersistentSSH(b *testing.B, c *testhost.Cluster, hosts []*testhost.Host) *persistentSSH {
	b.Helper()
	dir, err := os.MkdirTemp("/tmp", "rb-mux-") //nolint:usetesting // a short path: a unix socket's is limited, and b.TempDir's is long
	require.NoError(b, err)
	b.Cleanup(func() { _ = os.RemoveAll(dir) })
	opts := func(h *testhost.Host) []string {
		return []string{"-i", c.Key, "-o", "IdentitiesOnly=yes", "-o", "UserKnownHostsFile=" + c.KnownHosts,
			"-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", "-o", "KexAlgorithms=curve25519-sha256",
			"-o", "ControlPath=" + filepath.Join(dir, h.Name), "-p", strconv.Itoa(h.Port), h.User + "@" + h.Address}
	}
	for _, h := range hosts {
		out, err := exec.CommandContext(b.Context(), "ssh", append([]string{"-o", "ControlMaster=yes", "-o", "ControlPersist=yes", "-fN"}, opts(h)...)...).CombinedOutput()
		require.NoError(b, err, "start the master for %s: %s", h.Name, out)
	}
	b.Cleanup(func() {
		for _, h := range hosts {
			_ = exec.Command("ssh", append([]string{"-O", "exit"}, opts(h)...)...).Run() // stops the master; nothing to report
		}
	})
	var joined strings.Builder
	for i, cmd := range auditCommands {
		fmt.Fprintf(&joined, "echo ==rb-c%d; %s; echo ==rb-rc%d $?; ", i+1, cmd, i+1)
	}
	return &persistentSSH{hosts: hosts, args: opts, joined: joined.String()}
}

// run runs the joined line on every host at once, as `&` and `wait` do,
// and checks every host answered every command.
func (p *persistentSSH) run(b *testing.B, ctx context.Context) {
	b.Helper()
	var wg sync.WaitGroup
	errs := make([]error, len(p.hosts))
	for i, h := range p.hosts {
		wg.Go(func() {
			out, err := exec.CommandContext(ctx, "ssh", append(append([]string{"-n", "-o", "ControlMaster=no"}, p.args(h)...), p.joined)...).CombinedOutput()
			switch {
			case err != nil:
				errs[i] = fmt.Errorf("%s: %w: %s", h.Name, err, out)
			case !strings.Contains(string(out), "==rb-rc5 "):
				errs[i] = fmt.Errorf("%s did not answer every command: %s", h.Name, out)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(b, err)
	}
}

// alternate runs the ways in turn, one per b.Loop iteration, so that each
// meets the same load, and returns each way's total wall time, the hosts'
// CPU time (usage) it cost, and how many times it ran.
func alternate(b *testing.B, usage func() time.Duration, ways ...func()) (wall, cpu []time.Duration, counts []int) {
	b.Helper()
	wall, cpu, counts = make([]time.Duration, len(ways)), make([]time.Duration, len(ways)), make([]int, len(ways))
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		way := i % len(ways)
		c0, t0 := usage(), time.Now()
		ways[way]()
		wall[way] += time.Since(t0)
		cpu[way] += usage() - c0
		counts[way]++
	}
	return wall, cpu, counts
}

// hostsUsage returns a reader of the hosts' CPU time, summed over their
// cgroups.
func hostsUsage(b *testing.B, hosts []*testhost.Host) func() time.Duration {
	b.Helper()
	stats := make([]string, len(hosts))
	for i, h := range hosts {
		f, err := h.CPUStat()
		require.NoError(b, err)
		stats[i] = f
	}
	return func() time.Duration {
		var sum time.Duration
		for _, f := range stats {
			out, err := os.ReadFile(f)
			require.NoError(b, err)
			v, ok := strings.CutPrefix(strings.SplitN(string(out), "\n", 2)[0], "usage_usec ")
			require.True(b, ok, "%s starts with usage_usec", f)
			us, err := strconv.ParseInt(v, 10, 64)
			require.NoError(b, err)
			sum += time.Duration(us) * time.Microsecond
		}
		return sum
	}
}
