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
	profile := fs.String("profile", DefaultProfile, "SGLang build to impersonate: "+strings.Join(ProfileNames, ", ")+
		" (log era, router, endpoints, metric names, abort latency; see sglang-sim's package doc)")
	logFormat := fs.String("log-format", "", "override the profile's log era: 2025-mid, 2025-late, 2026-mid or 2026-late")
	backend := fs.String("transfer-backend", "nixl", "--disaggregation-transfer-backend of both engines: nixl or mooncake")
	metrics := fs.String("metrics", "on", "on: the engines run with --enable-metrics; off: /metrics answers 404")
	requestIDs := fs.String("request-ids", RequestIDsEngine, "engine: engines mint every rid (X-Request-Id ignored, as in SGLang); client: X-Request-Id becomes the rid")
	abortLatency := fs.String("abort-latency", "", "delay between a client's disconnect and the engines' abort, MIN-MAX such as 2s-4s or one duration (default: the profile's router path, 2s-4s or 4s-8s)")
	logTZ := fs.String("log-tz", "", "time zone of the engines' log lines, exported as TZ (default: the machine's local zone)")
	overlap := fs.String("overlap", OverlapOn, "overlap schedule: on (SGLang's default), flag (--disable-overlap-schedule), config (set in a --config YAML), forced (off through EAGLE speculative decoding)")
	burst := fs.Int("wedge-burst", 8, "in-flight transfer aborts within the wedge window that wedge an overlap-schedule decode")
	maxTokens := fs.Int("max-tokens", 32, "default max_tokens of a request that names none")
	healthTimeout := fs.Duration("health-timeout", 0, "SGLANG_HEALTH_CHECK_TIMEOUT for the engines (0: SGLang's 20s)")
	timeout := fs.Duration("timeout", 15*time.Second, "how long to wait for each role to serve")
	var engineArgs, routerArgs stringList
	fs.Var(&engineArgs, "engine-arg", "extra argument for both engine command lines (repeatable)")
	fs.Var(&routerArgs, "router-arg", "extra argument for the router command line, e.g. --health-check-interval-secs (repeatable)")
	if err := parseInterspersed(fs, args); err != nil {
		return err
	}
	knobs, err := checkKnobs(*profile, *logFormat, *backend, *metrics, *requestIDs, *abortLatency, *logTZ, *overlap, *scenario)
	if err != nil {
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
		Profile: knobs.profile.Name, Era: knobs.era.String(), TransferBackend: *backend, MetricsOff: *metrics == "off",
		Overlap: *overlap, LogTZ: *logTZ, RouterArgs: routerArgs,
	}
	d.EngineArgs = []string{
		"--sim-profile", knobs.profile.Name,
		"--sim-token-rate", strconv.FormatFloat(*tokenRate, 'f', -1, 64),
		"--sim-idle-refresh", idle.String(),
		"--sim-wedge-burst", strconv.Itoa(*burst),
		"--sim-default-max-tokens", strconv.Itoa(*maxTokens),
		"--sim-request-ids", *requestIDs,
	}
	if *logFormat != "" {
		d.EngineArgs = append(d.EngineArgs, "--sim-log-format", *logFormat)
	}
	if *abortLatency != "" {
		d.EngineArgs = append(d.EngineArgs, "--sim-abort-latency", knobs.abortLatency.String())
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
	fmt.Fprintf(&b, "deployment %q (scenario %s, profile %s) up in %s\n", d.Name, d.Scenario, d.Profile, d.Dir)
	for _, role := range Roles {
		st, _ := readUnitState(d.StateFile(role))
		fmt.Fprintf(&b, "  %-8s %-24s pid=%d\n", role, d.URL(role), st.effective().MainPID)
	}
	fmt.Fprintf(&b, "  inventory %s\n", filepath.Join(d.Dir, "inventory.yaml"))
	_, err = io.WriteString(stdout, b.String())
	return err
}

// upKnobs are `up`'s validated build profile and knobs.
type upKnobs struct {
	profile      Profile
	era          LogEra
	abortLatency LatencyRange
}

// checkKnobs validates the profile and the knobs of `up` before anything is written.
func checkKnobs(profile, logFormat, backend, metrics, requestIDs, abortLatency, logTZ, overlap, scenario string) (upKnobs, error) {
	var k upKnobs
	var err error
	if k.profile, err = LookupProfile(profile); err != nil {
		return k, err
	}
	k.era = k.profile.Era
	if logFormat != "" {
		if k.era, err = ParseLogEra(logFormat); err != nil {
			return k, err
		}
	}
	k.abortLatency = k.profile.AbortLatency
	if abortLatency != "" {
		if k.abortLatency, err = ParseLatencyRange(abortLatency); err != nil {
			return k, fmt.Errorf("--abort-latency: %w", err)
		}
	}
	if logTZ != "" {
		if _, err := time.LoadLocation(logTZ); err != nil {
			return k, fmt.Errorf("--log-tz: unknown time zone %q: %w", logTZ, err)
		}
	}
	switch {
	case backend != "nixl" && backend != "mooncake":
		return k, fmt.Errorf("--transfer-backend must be nixl or mooncake, not %q", backend)
	case metrics != "on" && metrics != "off":
		return k, fmt.Errorf("--metrics must be on or off, not %q", metrics)
	case requestIDs != RequestIDsEngine && requestIDs != RequestIDsClient:
		return k, fmt.Errorf("--request-ids must be engine or client, not %q", requestIDs)
	}
	switch overlap {
	case OverlapOn, OverlapFlag:
	case OverlapConfig, OverlapForced:
		if scenario == ScenarioFixed {
			return k, fmt.Errorf("--overlap %s contradicts --scenario fixed (which passes --disable-overlap-schedule)", overlap)
		}
	default:
		return k, fmt.Errorf("--overlap must be on, flag, config or forced, not %q", overlap)
	}
	return k, nil
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
