package sim

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, " ") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// runUp implements `sglang-sim up --dir DIR [--scenario NAME] [--name sim]`.
func runUp(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("up", flag.ContinueOnError)
	dir := fs.String("dir", "", "deployment directory (created if missing)")
	scenario := fs.String("scenario", ScenarioHealthy, "healthy, fixed, wedged, slow, stale-sample, prefill-stall, decode-crash or router-down")
	name := fs.String("name", "sim", "deployment name in inventory.yaml")
	host := fs.String("host", "127.0.0.1", "address every role listens on")
	restart := fs.String("restart", "no", "restart policy of the roles: no or on-failure")
	tokenRate := fs.Float64("token-rate", 40, "decode tokens per second per request")
	logInterval := fs.Int("decode-log-interval", 40, "--decode-log-interval of the decode engine")
	idle := fs.Duration("idle-refresh", 30*time.Second, "how often idle engines refresh their gauges")
	logFormat := fs.String("log-format", "", "SGLang log era: 2025-mid, 2025-late, 2026-mid (default) or 2026-late")
	burst := fs.Int("wedge-burst", 8, "in-flight transfer aborts within the wedge window that wedge an overlap-schedule decode")
	maxTokens := fs.Int("max-tokens", 32, "default max_tokens of a request that names none")
	healthTimeout := fs.Duration("health-timeout", 0, "SGLANG_HEALTH_CHECK_TIMEOUT for the engines (0: SGLang's 20s)")
	timeout := fs.Duration("timeout", 15*time.Second, "how long to wait for each role to serve")
	var engineArgs stringList
	fs.Var(&engineArgs, "engine-arg", "extra argument for both engine command lines (repeatable)")
	if err := parseInterspersed(fs, args); err != nil {
		return err
	}
	if *dir == "" {
		return errors.New("usage: sglang-sim up --dir DIR [--scenario NAME] [--name sim]")
	}
	if err := validScenario(*scenario); err != nil {
		return err
	}
	if *restart != "no" && *restart != "on-failure" {
		return fmt.Errorf("--restart must be no or on-failure, not %q", *restart)
	}
	abs, err := filepath.Abs(*dir)
	if err != nil {
		return fmt.Errorf("resolve %s: %w", *dir, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", abs, err)
	}
	if old, err := LoadDeployment(abs); err == nil {
		for _, role := range Roles {
			if st, _ := readUnitState(old.StateFile(role)); st.effective().ActiveState == "active" {
				return fmt.Errorf("a deployment is already up in %s (%s is active): run sglang-sim down --dir %s first", abs, role, abs)
			}
		}
	}
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return fmt.Errorf("find own binary: %w", err)
	}
	ports, err := freePorts(ctx, *host, 4)
	if err != nil {
		return err
	}
	d := &Deployment{
		Dir: abs, Name: *name, Scenario: *scenario, Binary: exe, Host: *host, Restart: *restart,
		RouterPort: ports[0], PrefillPort: ports[1], BootstrapPort: ports[2], DecodePort: ports[3],
		DecodeLogInterval: *logInterval, WedgeBurst: *burst,
	}
	d.EngineArgs = []string{
		"--sim-token-rate", strconv.FormatFloat(*tokenRate, 'f', -1, 64),
		"--sim-idle-refresh", idle.String(),
		"--sim-wedge-burst", strconv.Itoa(*burst),
		"--sim-default-max-tokens", strconv.Itoa(*maxTokens),
	}
	if *logFormat != "" {
		if _, err := ParseLogEra(*logFormat); err != nil {
			return err
		}
		d.EngineArgs = append(d.EngineArgs, "--sim-log-format", *logFormat)
	}
	d.EngineArgs = append(d.EngineArgs, engineArgs...)
	if *healthTimeout > 0 {
		d.Env = append(d.Env, "SGLANG_HEALTH_CHECK_TIMEOUT="+strconv.FormatFloat(healthTimeout.Seconds(), 'f', -1, 64))
	}
	for _, step := range []func() error{d.save, d.writeScripts, d.writeDescriptors} {
		if err := step(); err != nil {
			return err
		}
	}
	if err := d.startAll(ctx, *timeout); err != nil {
		_ = d.apply(ctx, "stop", Roles, *timeout, io.Discard)
		return err
	}
	if f := scenarioFaults[*scenario]; f != "" {
		if err := d.injectFault(ctx, Fault{Name: f}, io.Discard); err != nil {
			return fmt.Errorf("scenario %s: %w", *scenario, err)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "deployment %q (scenario %s) up in %s\n", d.Name, d.Scenario, d.Dir)
	for _, role := range Roles {
		st, _ := readUnitState(d.StateFile(role))
		fmt.Fprintf(&b, "  %-8s %-24s pid=%d\n", role, d.URL(role), st.effective().MainPID)
	}
	fmt.Fprintf(&b, "  inventory %s\n", filepath.Join(d.Dir, "inventory.yaml"))
	_, err = io.WriteString(stdout, b.String())
	return err
}

// startAll starts the three roles concurrently; each is independent at start (decode
// dials prefill on its first request), so `up` takes as long as the slowest role.
func (d *Deployment) startAll(ctx context.Context, timeout time.Duration) error {
	var wg sync.WaitGroup
	errs := make([]error, len(Roles))
	for i, role := range Roles {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = d.startRole(ctx, role, timeout)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
