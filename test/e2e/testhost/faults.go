//go:build e2e

package testhost

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// netnsPrefix names the hosts' network namespaces: netns_of in
// test/testhost/lib.sh.
const netnsPrefix = "rbe-"

// PowerCut ends the host as a power failure does: its link goes down
// first, so its peers get no FIN or RST, only silence, and then every
// process in it is killed at once, with no shutdown. Its state (the
// overlay every write goes to) is gone with it; PowerOn boots it again.
func (c *Cluster) PowerCut(tb testing.TB, h *Host) {
	tb.Helper()
	c.dropMux(h)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if out, err := runScript(ctx, filepath.Join(scriptsDir(), "down.sh"), "--power-cut", h.Name); err != nil {
		tb.Fatalf("testhost: down.sh --power-cut %s: %v\n%s", h.Name, err, out)
	}
}

// PowerOn boots a host that PowerCut ended, pristine as after any boot
// (a new host key too: the cluster's known_hosts has it; a copy made
// before names the old one). The other hosts keep running.
func (c *Cluster) PowerOn(tb testing.TB, h *Host) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), upTimeout)
	defer cancel()
	if out, err := runScript(ctx, filepath.Join(scriptsDir(), "up.sh"), strconv.Itoa(len(c.Hosts))); err != nil {
		tb.Fatalf("testhost: up.sh %d (to power %s on): %v\n%s", len(c.Hosts), h.Name, err, out)
	}
	c.startMuxTo(tb, h)
}

// Partition drops every packet between hosts a and b, both ways, in each
// one's own network namespace (iptables DROP), as a switch or firewall
// that stops forwarding does: both sides see silence, no FIN, RST or ICMP.
// Other traffic of either host flows on. Heal undoes it.
func (c *Cluster) Partition(tb testing.TB, a, b *Host) {
	tb.Helper()
	c.filter(tb, "-I", a, b)
}

// Heal lets traffic between a and b flow again after Partition.
func (c *Cluster) Heal(tb testing.TB, a, b *Host) {
	tb.Helper()
	c.filter(tb, "-D", a, b)
}

func (c *Cluster) filter(tb testing.TB, op string, a, b *Host) {
	tb.Helper()
	for _, p := range [][2]*Host{{a, b}, {b, a}} {
		ns := netnsPrefix + p[0].Name
		for _, rule := range [][]string{{"OUTPUT", "-d"}, {"INPUT", "-s"}} {
			args := []string{"netns", "exec", ns, "iptables", "-w", "5", op, rule[0], rule[1], p[1].Address, "-j", "DROP"}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput()
			cancel()
			if err != nil {
				tb.Fatalf("testhost: ip %v: %v\n%s", args, err, out)
			}
		}
	}
}

// dropMux ends the master SSH connection to h, whose host is about to go
// away: a master whose peer went silent would hold every command sent
// through it until its keepalive gives up.
func (c *Cluster) dropMux(h *Host) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = exec.CommandContext(ctx, "ssh", append(c.sshArgs(), "-O", "exit", h.Name)...).Run() // no master is fine too
}

// startMuxTo opens the master connection to one host.
func (c *Cluster) startMuxTo(tb testing.TB, h *Host) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	// -f: ssh forks to the background once logged in; its stdio is /dev/null,
	// so Run returns then. ServerAlive* end a master whose host went away.
	args := append(c.sshArgs(), "-M", "-N", "-f", "-o", "ControlPersist=yes",
		"-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3", h.Name)
	if err := exec.CommandContext(ctx, "ssh", args...).Run(); err != nil {
		tb.Logf("testhost: no SSH master connection to %s (%v); commands connect one by one", h.Name, err)
	}
}

// String names the host for messages.
func (h *Host) String() string { return fmt.Sprintf("%s (%s)", h.Name, h.Address) }
