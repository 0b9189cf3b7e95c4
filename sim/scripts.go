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
	env := []string{"SGLANG_DISAGGREGATION_NIXL_BACKEND=UCX"}
	if role == "decode" {
		env = append(env, "SGLANG_DISAGGREGATION_WAITING_TIMEOUT=300", "UCX_NET_DEVICES=mlx5_2:1,mlx5_3:1")
	} else {
		env = append(env, "SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT=300", "UCX_NET_DEVICES=mlx5_0:1,mlx5_1:1")
	}
	env = append(env, "TOKENIZERS_PARALLELISM=false")
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
		"--disaggregation-transfer-backend", "nixl",
		"--disaggregation-bootstrap-port", strconv.Itoa(d.BootstrapPort),
		"--mem-fraction-static", map[string]string{"prefill": "0.82", "decode": "0.85"}[role],
	)
	if d.Scenario == ScenarioFixed {
		argv = append(argv, "--disable-overlap-schedule")
	}
	if role == "decode" {
		argv = append(argv, "--decode-log-interval", strconv.Itoa(d.DecodeLogInterval))
	}
	argv = append(argv, "--watchdog-timeout", "300", "--enable-metrics", "--log-level", "info")
	argv = append(argv, d.EngineArgs...)
	return launchScript(header, env, argv)
}

// routerScript renders serve_router.sh, a launch_router command line.
func (d *Deployment) routerScript() string {
	header := []string{
		d.Script("router") + " -- written by `sglang-sim up`, started by `sglang-sim ctl start router`.",
		"Simulated sglang_router (PD mode) of deployment " + strconv.Quote(d.Name) + ".",
	}
	argv := []string{d.Binary, "router",
		"--pd-disaggregation",
		"--prefill", d.URL("prefill"), strconv.Itoa(d.BootstrapPort),
		"--decode", d.URL("decode"),
		"--host", d.Host,
		"--port", strconv.Itoa(d.RouterPort),
	}
	return launchScript(header, nil, argv)
}

func (d *Deployment) script(role string) string {
	if role == "router" {
		return d.routerScript()
	}
	return d.engineScript(role)
}

func (d *Deployment) writeScripts() error {
	for _, role := range Roles {
		if err := writeFileAtomic(d.Script(role), []byte(d.script(role)), 0o755); err != nil {
			return fmt.Errorf("write launch script: %w", err)
		}
	}
	return nil
}
