package sim

import (
	"fmt"
	"strconv"
	"strings"
)

// shellQuote quotes s for bash only when it needs it, so scripts stay readable.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=,+@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// launchScript renders a bash serve script in the shape of the fixtures'
// serve_dsv4_*.sh: environment exports, then exec of the server with one flag per
// continuation line. exec matters: the engine then has the script's PID, so
// /proc/MainPID/cmdline shows the real flags.
func launchScript(header []string, env []string, argv []string) string {
	var b strings.Builder
	b.WriteString("#!/usr/bin/env bash\n")
	for _, h := range header {
		b.WriteString("# " + h + "\n")
	}
	b.WriteString("set -euo pipefail\n\n")
	for _, e := range env {
		b.WriteString("export " + e + "\n")
	}
	if len(env) > 0 {
		b.WriteString("\n")
	}
	b.WriteString("exec " + shellQuote(argv[0]) + " " + argv[1])
	// Flags and their values share a line, like "--port 30200".
	for i := 2; i < len(argv); i++ {
		line := shellQuote(argv[i])
		for i+1 < len(argv) && !strings.HasPrefix(argv[i+1], "--") {
			i++
			line += " " + shellQuote(argv[i])
		}
		b.WriteString(" \\\n  " + line)
	}
	b.WriteString("\n")
	return b.String()
}

// engineScript renders serve_prefill.sh or serve_decode.sh. The topology is the
// fixtures' (prefill TP4; decode TP4 with DP attention) so that log prefixes and
// metric labels look like the incident's deployment.
func (d *Deployment) engineScript(role string) string {
	port := d.PrefillPort
	if role == "decode" {
		port = d.DecodePort
	}
	header := []string{
		d.Script(role) + " -- written by `sglang-sim up`, started by `sglang-sim ctl start " + role + "`.",
		"Simulated SGLang " + role + " engine of deployment " + strconv.Quote(d.Name) + ", shaped like serve_dsv4_" + role + ".sh.",
		"Edit it like a real serve script (e.g. add --disable-overlap-schedule), then `sglang-sim ctl --dir " + d.Dir + " restart " + role + "`.",
	}
	backend := d.backend()
	var env []string
	if backend == "nixl" {
		// The NIXL plugin, and UCX's NICs: NIXL ignores --disaggregation-ib-device.
		env = append(env, "SGLANG_DISAGGREGATION_NIXL_BACKEND=UCX")
	}
	if role == "decode" {
		env = append(env, "SGLANG_DISAGGREGATION_WAITING_TIMEOUT=300")
		if backend == "nixl" {
			env = append(env, "UCX_NET_DEVICES=mlx5_2:1,mlx5_3:1")
		}
	} else {
		env = append(env, "SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT=300")
		if backend == "nixl" {
			env = append(env, "UCX_NET_DEVICES=mlx5_0:1,mlx5_1:1")
		}
	}
	env = append(env, "TOKENIZERS_PARALLELISM=false")
	if d.Era == EraLate2026.String() {
		// The 2026-late fixtures carry millisecond stamps: their deployment set this.
		env = append(env, "SGLANG_LOG_MS=1")
	}
	if d.LogTZ != "" {
		// Python's logging stamps lines in the process's local time, i.e. TZ.
		env = append(env, "TZ="+d.LogTZ)
	}
	env = append(env, d.Env...)
	argv := []string{d.Binary, "engine",
		"--model-path", "/models/DeepSeek-V4-Flash",
		"--served-model-name", "deepseek-v4",
		"--trust-remote-code",
		"--host", d.Host,
		"--port", strconv.Itoa(port),
		"--tp-size", "4",
	}
	if role == "decode" {
		argv = append(argv, "--dp-size", "4", "--enable-dp-attention")
	}
	argv = append(argv,
		"--disaggregation-mode", role,
		"--disaggregation-transfer-backend", backend,
		"--disaggregation-bootstrap-port", strconv.Itoa(d.BootstrapPort),
	)
	if backend == "mooncake" {
		argv = append(argv, "--disaggregation-ib-device", map[string]string{"prefill": "mlx5_0,mlx5_1", "decode": "mlx5_2,mlx5_3"}[role])
	}
	argv = append(argv, "--mem-fraction-static", map[string]string{"prefill": "0.82", "decode": "0.85"}[role])
	switch d.overlap() {
	case OverlapFlag:
		argv = append(argv, "--disable-overlap-schedule")
	case OverlapConfig:
		argv = append(argv, "--config", d.ConfigFile(role))
	case OverlapForced:
		// MTP through EAGLE: before spec-v2, SGLang turns the overlap schedule off.
		argv = append(argv, "--speculative-algorithm", "EAGLE", "--speculative-num-steps", "3",
			"--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4")
	}
	if role == "decode" {
		argv = append(argv, "--decode-log-interval", strconv.Itoa(d.DecodeLogInterval))
	}
	argv = append(argv, "--watchdog-timeout", "300")
	if !d.MetricsOff {
		argv = append(argv, "--enable-metrics")
	}
	argv = append(argv, "--log-level", "info")
	argv = append(argv, d.EngineArgs...)
	return launchScript(header, env, argv)
}

// backend is the engines' transfer backend; NIXL, the incident's, by default.
func (d *Deployment) backend() string {
	if d.TransferBackend == "" {
		return "nixl"
	}
	return d.TransferBackend
}

// configYAML renders <role>-config.yaml for --overlap config: the overlap schedule
// turned off in the file SGLang merges in (server_args_config_parser.py), not on the
// command line, so the flag is nowhere in the process's cmdline.
func (d *Deployment) configYAML(role string) string {
	return "# " + d.ConfigFile(role) + " -- written by `sglang-sim up --overlap config`,\n" +
		"# read by serve_" + role + ".sh through --config (keys are flag names, CLI flags win).\n" +
		"disable-overlap-schedule: true\n"
}

// routerScript renders serve_router.sh, a launch_router command line.
func (d *Deployment) routerScript() string {
	header := []string{
		d.Script("router") + " -- written by `sglang-sim up`, started by `sglang-sim ctl start router`.",
		"Simulated " + d.routerName() + " (PD mode) of deployment " + strconv.Quote(d.Name) + ".",
	}
	argv := []string{d.Binary, "router",
		"--pd-disaggregation",
		"--prefill", d.URL("prefill"), strconv.Itoa(d.BootstrapPort),
		"--decode", d.URL("decode"),
		"--host", d.Host,
		"--port", strconv.Itoa(d.RouterPort),
	}
	if d.Profile != "" {
		argv = append(argv, "--sim-profile", d.Profile)
	}
	argv = append(argv, d.RouterArgs...)
	return launchScript(header, nil, argv)
}

// routerName names the router of the deployment's profile.
func (d *Deployment) routerName() string {
	if p, err := LookupProfile(d.Profile); err == nil && p.Router == RouterSGL {
		return "sglang_router (Rust sgl-router)"
	}
	return "sglang_router (SGLang Model Gateway)"
}

func (d *Deployment) script(role string) string {
	if role == "router" {
		return d.routerScript()
	}
	return d.engineScript(role)
}

func (d *Deployment) writeScripts() error {
	if d.overlap() == OverlapConfig {
		for _, role := range []string{"prefill", "decode"} {
			if err := writeFileAtomic(d.ConfigFile(role), []byte(d.configYAML(role)), 0o644); err != nil {
				return fmt.Errorf("write config file: %w", err)
			}
		}
	}
	for _, role := range Roles {
		if err := writeFileAtomic(d.Script(role), []byte(d.script(role)), 0o755); err != nil {
			return fmt.Errorf("write launch script: %w", err)
		}
	}
	return nil
}
