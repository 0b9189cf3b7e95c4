package main

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite golden files")

// shippedConfigs are the serve configs the repository ships, each checked
// against the example inventory (the config's own path, /etc/runbot/…, is
// the target host's).
func shippedConfigs(t *testing.T) []string {
	var out []string
	for _, dir := range []string{"../../deploy", "../../examples"} {
		files, err := filepath.Glob(filepath.Join(dir, "runbot*.yaml"))
		require.NoError(t, err)
		out = append(out, files...)
	}
	require.NotEmpty(t, out)
	return out
}

// checkCmd runs `runbot serve --check` in dir and returns its stdout,
// stderr and exit code.
func checkCmd(t *testing.T, runbot, dir string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(runbot, append([]string{"serve", "--check"}, args...)...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if err != nil {
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, "stderr: %s", stderr.String())
		code = exit.ExitCode()
	}
	return stdout.String(), stderr.String(), code
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "servecheck", name)
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test -update to create %s", path)
	require.Equal(t, string(want), got)
}

// TestServeCheckShippedConfigs: the shipped config passes serve --check
// against the example inventory, and a copy broken the ways a newcomer
// breaks it (a misspelt runbook, group and deployment, a channel by its
// #name, a rule that allows nobody, a param template that does not parse,
// a broken inventory) fails with every
// problem at its file:line:col, all in one pass, opening no store.
func TestServeCheckShippedConfigs(t *testing.T) {
	runbot, _ := buildBinaries(t)
	inv, err := filepath.Abs("../../examples/inventory.yaml")
	require.NoError(t, err)
	for _, cfg := range shippedConfigs(t) {
		t.Run(filepath.Base(cfg), func(t *testing.T) {
			abs, err := filepath.Abs(cfg)
			require.NoError(t, err)
			noRunbooks := t.TempDir()
			stdout, stderr, code := checkCmd(t, runbot, t.TempDir(), "--config", abs, "--inventory", inv, "--runbook-dir", noRunbooks)
			require.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout, stderr)
			require.Empty(t, stdout)
			require.Contains(t, stderr, "no errors")

			src, err := os.ReadFile(cfg)
			require.NoError(t, err)
			broken := string(src)
			for _, r := range [][2]string{
				{"runbook: sglang-pd-wedge", "runbook: sglang-pd-wegde"},
				{"params: {deployment: '{{ .labels.deployment }}'}", "params: {deployment: '{{ .labels.deployment }'}"},
				{"params: {deployment: dsv4}", "params: {deployment: dsv5, sampels: \"3\"}"},
				{"groups: [sre-oncall]}", "groups: [sre-oncal]}"},
				{"groups: [gpu-owners], channels: [C0INCIDENTS]", "channels: [\"#incidents\"]"},
				{"runbooks: [sglang-pd-audit, host-basics]", "runbooks: [sglang-pd-audti, host-basics]"},
			} {
				require.Contains(t, broken, r[0], "the shipped config changed: update the breakage")
				broken = strings.Replace(broken, r[0], r[1], 1)
			}
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "runbot.yaml"), []byte(broken), 0o600))
			invSrc, err := os.ReadFile(inv)
			require.NoError(t, err)
			brokenInv := strings.Replace(string(invSrc), "router:  {host: gpu-1,", "router:  {host: gpu-9,", 1)
			require.NotEqual(t, string(invSrc), brokenInv)
			require.NoError(t, os.WriteFile(filepath.Join(dir, "inventory.yaml"), []byte(brokenInv), 0o600))

			stdout, stderr, code = checkCmd(t, runbot, dir, "--config", "runbot.yaml", "--inventory", "inventory.yaml", "--runbook-dir", noRunbooks)
			require.Equal(t, 1, code, stderr)
			golden(t, filepath.Base(cfg)+".broken.golden", stdout)
			require.Contains(t, stderr, "runbot serve would not start")

			// With a good inventory the deployment checks run too.
			require.NoError(t, os.WriteFile(filepath.Join(dir, "inventory.yaml"), invSrc, 0o600))
			stdout, _, code = checkCmd(t, runbot, dir, "--config", "runbot.yaml", "--inventory", "inventory.yaml", "--runbook-dir", noRunbooks)
			require.Equal(t, 1, code)
			golden(t, filepath.Base(cfg)+".broken-refs.golden", stdout)
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			require.Len(t, entries, 2, "serve --check writes nothing (no store)")
		})
	}
}

// TestServeRefusesWhatCheckReports: serve itself stops on the problems
// --check reports, with their positions, before it opens the store or
// listens.
func TestServeRefusesWhatCheckReports(t *testing.T) {
	runbot, _ := buildBinaries(t)
	dir := t.TempDir()
	cfg := `listen: 127.0.0.1:0
store: ` + filepath.Join(dir, "runbot.db") + `
schedules:
  - {runbook: host-basic, cron: "* * * * *"}
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "runbot.yaml"), []byte(cfg), 0o600))
	cmd := exec.Command(runbot, "serve", "--config", "runbot.yaml")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "%s", out)
	require.Contains(t, string(out), `runbot.yaml:4:15: schedule 1: unknown runbook "host-basic" (did you mean "host-basics"?)`)
	require.NoFileExists(t, filepath.Join(dir, "runbot.db"))
}
