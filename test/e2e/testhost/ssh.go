//go:build e2e

package testhost

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runbot/runbot/internal/shell"
)

// DefaultTimeout bounds each command Run and Journal send to a host.
const DefaultTimeout = 30 * time.Second

// Result is what a command produced on a host.
type Result struct {
	Stdout   string
	Stderr   string
	ExitCode int
	Duration time.Duration
}

// Exec runs script with the host's login shell over the OpenSSH client, as root,
// with strict host key checking against the cluster's known_hosts. A non-zero exit
// of the script is a Result, not an error; the error is for SSH failures (exit
// 255) and for ctx ending first.
func (h *Host) Exec(ctx context.Context, script string) (Result, error) {
	args := append(h.c.sshArgs(), "-o", "ControlMaster=no", "--", h.Name, script)
	cmd := exec.CommandContext(ctx, "ssh", args...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 2 * time.Second
	start := time.Now()
	err := cmd.Run()
	r := Result{Stdout: stdout.String(), Stderr: stderr.String(), Duration: time.Since(start)}
	if ctx.Err() != nil {
		return r, fmt.Errorf("ssh %s: gave up after %s: %w", h.Name, r.Duration.Round(time.Millisecond), ctx.Err())
	}
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit) && exit.ExitCode() != 255:
		r.ExitCode = exit.ExitCode()
	default:
		return r, fmt.Errorf("ssh %s (%s): %w: %s", h.Name, h.Address, err, strings.TrimSpace(r.Stderr))
	}
	return r, nil
}

// Run runs script on the host and returns its stdout; the test fails, naming the
// host, the current step, the exit status and stderr, unless it exits 0 within
// DefaultTimeout.
func (h *Host) Run(tb testing.TB, script string) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), DefaultTimeout)
	defer cancel()
	r, err := h.Exec(ctx, script)
	if err != nil {
		tb.Fatalf("on %s%s: %s\n%v", h.Name, h.c.stepSuffix(), script, err)
	}
	if r.ExitCode != 0 {
		tb.Fatalf("on %s%s: %s\nexit status %d\nstdout: %s\nstderr: %s", h.Name, h.c.stepSuffix(), script,
			r.ExitCode, strings.TrimSpace(r.Stdout), strings.TrimSpace(r.Stderr))
	}
	return r.Stdout
}

// Journal returns the last lines of a unit's journal (journalctl -o short-iso).
func (h *Host) Journal(tb testing.TB, unit string, lines int) string {
	tb.Helper()
	return h.Run(tb, fmt.Sprintf("journalctl -u %s -n %d --no-pager -o short-iso", shell.Quote(unit), lines))
}

// UnitState returns systemctl show's ActiveState, SubState, Result, NRestarts,
// MainPID and ExecMainStatus of a unit.
func (h *Host) UnitState(tb testing.TB, unit string) map[string]string {
	tb.Helper()
	out := h.Run(tb, "systemctl show -p ActiveState,SubState,Result,NRestarts,MainPID,ExecMainStatus "+shell.Quote(unit))
	st := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			st[k] = v
		}
	}
	return st
}

// Fault posts a fault to the simulator's admin endpoint (POST /_sim/fault) of a
// role ("router", "prefill" or "decode") from inside the host, and returns the
// answer, e.g. {"ok":true,"fault":"pd-wedge","state":{"wedged":true,...}}.
func (h *Host) Fault(tb testing.TB, role, body string) string {
	tb.Helper()
	port, ok := map[string]int{"router": RouterPort, "prefill": PrefillPort, "decode": DecodePort}[role]
	if !ok {
		tb.Fatalf("testhost: unknown role %q (want router, prefill or decode)", role)
	}
	return h.Run(tb, fmt.Sprintf("curl -sS --fail-with-body -m 10 -H 'Content-Type: application/json' -d %s http://127.0.0.1:%d/_sim/fault",
		shell.Quote(body), port))
}

// sshArgs are the OpenSSH options every connection uses: the cluster's
// ssh_config (key, known_hosts, strict checking) and its multiplexing socket.
func (c *Cluster) sshArgs() []string {
	return []string{"-F", c.SSHConfig, "-o", "ControlPath=" + c.muxPath(), "-o", "ConnectTimeout=5"}
}

func (c *Cluster) muxPath() string { return filepath.Join(c.RunDir, "mux-%C") }

// startMux opens one master connection per host, so that each command costs
// ~10 ms instead of a ~150 ms handshake. A command falls back to its own
// connection when the master is gone.
func (c *Cluster) startMux(tb testing.TB) {
	tb.Helper()
	for _, h := range c.Hosts {
		c.startMuxTo(tb, h)
	}
}

func (c *Cluster) stopMux() {
	for _, h := range c.Hosts {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = exec.CommandContext(ctx, "ssh", append(c.sshArgs(), "-O", "exit", h.Name)...).Run()
		cancel()
	}
}

// Eventually polls cond every 200 ms, in the test's goroutine (so cond may call
// Run and fail the test), until it reports done. After timeout the test fails
// with what was awaited and cond's description of the last state it saw.
func Eventually(tb testing.TB, timeout time.Duration, what string, cond func() (done bool, last string)) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		done, last := cond()
		if done {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("gave up after %s waiting for %s; last saw:\n%s", timeout, what, last)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
