//go:build e2e

package testhost

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// reportLines is how many lines of each journal and log a failure report shows.
const reportLines = 40

type attachedLog struct{ name, path string }

// Step names what the test does next, and on which host (nil for none), so that
// a failure says where it happened. It also logs the step.
func (c *Cluster) Step(tb testing.TB, h *Host, format string, args ...any) {
	tb.Helper()
	name := fmt.Sprintf(format, args...)
	c.mu.Lock()
	c.step, c.stepHost, c.stepAt = name, "", time.Now()
	if h != nil {
		c.stepHost = h.Name
	}
	c.mu.Unlock()
	if h != nil {
		tb.Logf("step: %s (on %s)", name, h.Name)
	} else {
		tb.Logf("step: %s", name)
	}
}

// AttachLog adds a file on this machine, such as runbot's log, whose last lines
// the failure report shows.
func (c *Cluster) AttachLog(name, path string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.logs = append(c.logs, attachedLog{name, path})
}

func (c *Cluster) stepSuffix() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.step == "" {
		return ""
	}
	return fmt.Sprintf(" (step %q)", c.step)
}

// reportScript prints, on a host, the state of each unit and its last journal
// lines.
var reportScript = func() string {
	var b strings.Builder
	for _, u := range Units {
		fmt.Fprintf(&b, "echo \"--- %[1]s: $(systemctl show -p ActiveState,SubState,Result,NRestarts,MainPID %[1]s | tr '\\n' ' ')\"; ", u)
		fmt.Fprintf(&b, "journalctl -u %s -n %d --no-pager -o short-iso; ", u, reportLines)
	}
	return b.String()
}()

// failureReport is what an engineer needs to start on a failed test: the last
// step and its host, each host's units and journals, and the attached logs.
func (c *Cluster) failureReport() string {
	var b strings.Builder
	c.mu.Lock()
	step, stepHost, stepAt, logs := c.step, c.stepHost, c.stepAt, append([]attachedLog(nil), c.logs...)
	c.mu.Unlock()
	b.WriteString("===== testhost failure report =====\n")
	switch {
	case step == "":
		b.WriteString("no step was recorded (use Cluster.Step)\n")
	case stepHost != "":
		fmt.Fprintf(&b, "last step: %q on %s, begun %s before this report\n", step, stepHost, time.Since(stepAt).Round(time.Millisecond))
	default:
		fmt.Fprintf(&b, "last step: %q, begun %s before this report\n", step, time.Since(stepAt).Round(time.Millisecond))
	}
	// The step's host first: that is where the engineer looks first.
	hosts := append([]*Host(nil), c.Hosts...)
	for i, h := range hosts {
		if h.Name == stepHost {
			hosts[0], hosts[i] = hosts[i], hosts[0]
		}
	}
	for _, h := range hosts {
		fmt.Fprintf(&b, "\n=== %s (%s), deployment %s; ssh -F %s %s\n", h.Name, h.Address, h.Deployment, c.SSHConfig, h.Name)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		r, err := h.Exec(ctx, reportScript)
		cancel()
		if err != nil {
			fmt.Fprintf(&b, "cannot reach %s: %v\n--- last lines of its console (%s)\n", h.Name, err, c.consoleLog(h))
			writeTail(&b, c.consoleLog(h), reportLines)
			continue
		}
		b.WriteString(r.Stdout)
	}
	for _, l := range logs {
		fmt.Fprintf(&b, "\n=== %s: last %d lines of %s\n", l.name, reportLines, l.path)
		writeTail(&b, l.path, reportLines)
	}
	b.WriteString("===== end of testhost failure report =====")
	return b.String()
}

func (c *Cluster) consoleLog(h *Host) string {
	return filepath.Join(c.RunDir, h.Name, "console.log")
}

func writeTail(b *strings.Builder, path string, n int) {
	f, err := os.Open(path)
	if err != nil {
		fmt.Fprintf(b, "(%v)\n", err)
		return
	}
	defer func() { _ = f.Close() }()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
}
