package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite golden files")

// shippedConfigs are the serve configs the repository ships, each checked
// against the example inventory (the config's own path, /etc/runbot/…, is
// the target host's).
func shippedConfigs(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, dir := range []string{"../../deploy", "../../examples"} {
		files, err := filepath.Glob(filepath.Join(dir, "runbot*.yaml"))
		require.NoError(t, err)
		out = append(out, files...)
	}
	require.NotEmpty(t, out)
	return out
}

// checkCmd runs `runbot serve --check` in dir, without the shipped
// config's secret variables in its environment, and returns its stdout,
// stderr and exit code.
func checkCmd(t *testing.T, runbot, dir string, args ...string) (string, string, int) {
	t.Helper()
	return checkCmdEnv(t, runbot, dir, nil, args...)
}

// shippedSecretEnv are the environment variables the shipped config
// takes secrets from.
var shippedSecretEnv = []string{"SLACK_BOT_TOKEN", "RUNBOT_ALERT_TOKEN"}

// checkCmdEnv is checkCmd with env added to the scrubbed environment.
func checkCmdEnv(t *testing.T, runbot, dir string, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(runbot, append([]string{"serve", "--check"}, args...)...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(shippedSecretEnv, name) {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
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
			// Its secrets are not on this machine: warnings, each at
			// the key that names it.
			golden(t, filepath.Base(cfg)+".golden", strings.ReplaceAll(stdout, filepath.Dir(abs)+string(filepath.Separator), ""))
			require.Contains(t, stderr, "no errors, 3 warning(s)")

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

// TestServeCheckSecrets: with --secrets, a secret reference that does not
// load is an error at the key that names it, one that loads passes, and
// no secret's value is ever printed.
func TestServeCheckSecrets(t *testing.T) {
	runbot, _ := buildBinaries(t)
	dir := t.TempDir()
	const botToken, alertToken, signing = "xoxb-planted-bot-token", "planted-alert-token", "planted-signing-secret"
	secretFile := filepath.Join(dir, "signing-secret")
	cfg := `store: ` + filepath.Join(dir, "runbot.db") + `
tls: {cert: ` + filepath.Join(dir, "cert.pem") + `, key: ` + filepath.Join(dir, "key.pem") + `}
slack:
  bot_token: {env: SLACK_BOT_TOKEN}
  signing_secret: {file: ` + secretFile + `}
  channel: C0123456789
alerts:
  bearer_token: {env: RUNBOT_ALERT_TOKEN}
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "runbot.yaml"), []byte(cfg), 0o600))
	noRunbooks := t.TempDir()
	args := []string{"--config", "runbot.yaml", "--runbook-dir", noRunbooks}

	for _, tc := range []struct {
		name       string
		env        []string
		files      bool // the secret file and the TLS files exist
		args       []string
		code       int
		problems   []string
		noProblems bool
	}{
		{name: "nothing there, warnings", code: 0, problems: []string{
			"runbot.yaml:2:13: warning: tls.cert: open " + filepath.Join(dir, "cert.pem") + ": no such file or directory",
			"runbot.yaml:2:" + fmt.Sprint(len("tls: {cert: "+filepath.Join(dir, "cert.pem")+", key: ")+1) + ": warning: tls.key: open " + filepath.Join(dir, "key.pem") + ": no such file or directory",
			"runbot.yaml:4:14: warning: slack.bot_token (env SLACK_BOT_TOKEN) does not load: secret: environment variable SLACK_BOT_TOKEN is not set",
			"runbot.yaml:5:19: warning: slack.signing_secret (file " + secretFile + ") does not load: secret: open " + secretFile + ": no such file or directory",
			"runbot.yaml:8:17: warning: alerts.bearer_token (env RUNBOT_ALERT_TOKEN) does not load: secret: environment variable RUNBOT_ALERT_TOKEN is not set",
		}},
		{name: "required, one missing", env: []string{"SLACK_BOT_TOKEN=" + botToken}, files: true, args: []string{"--secrets"}, code: 1, problems: []string{
			"runbot.yaml:8:17: alerts.bearer_token (env RUNBOT_ALERT_TOKEN) does not load: secret: environment variable RUNBOT_ALERT_TOKEN is not set",
		}},
		{name: "required, one too short", env: []string{"SLACK_BOT_TOKEN=" + botToken, "RUNBOT_ALERT_TOKEN=x"}, files: true, args: []string{"--secrets"}, code: 1, problems: []string{
			"runbot.yaml:8:17: alerts.bearer_token (env RUNBOT_ALERT_TOKEN) is 1 character(s) long: a secret must have at least 8 (e.g. head -c 32 /dev/urandom | base64); a shorter one is guessable and would be redacted out of ordinary words",
		}},
		{name: "required, all there", env: []string{"SLACK_BOT_TOKEN=" + botToken, "RUNBOT_ALERT_TOKEN=" + alertToken}, files: true, args: []string{"--secrets"}, code: 0, noProblems: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, f := range []string{secretFile, filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")} {
				if tc.files {
					require.NoError(t, os.WriteFile(f, []byte(signing+"\n"), 0o600))
				} else {
					require.NoError(t, os.RemoveAll(f))
				}
			}
			stdout, stderr, code := checkCmdEnv(t, runbot, dir, tc.env, append(slices.Clone(args), tc.args...)...)
			require.Equal(t, tc.code, code, "stdout: %s\nstderr: %s", stdout, stderr)
			for _, p := range tc.problems {
				require.Contains(t, stdout, p+"\n")
			}
			if tc.noProblems {
				require.Empty(t, stdout)
			} else {
				require.Len(t, strings.Split(strings.TrimSpace(stdout), "\n"), len(tc.problems), stdout)
			}
			for _, v := range []string{botToken, alertToken, signing} {
				require.NotContains(t, stdout+stderr, v)
			}
			require.NoFileExists(t, filepath.Join(dir, "runbot.db"), "--check opens no store")
		})
	}
}

// TestServeCheckScheduleValues: a schedule's param values are checked as a
// run would check them (range, host in the inventory), at their position,
// before serve starts a schedule that would fail at every firing.
func TestServeCheckScheduleValues(t *testing.T) {
	runbot, _ := buildBinaries(t)
	dir := t.TempDir()
	cfg := `store: ` + filepath.Join(dir, "runbot.db") + `
inventory: inventory.yaml
schedules:
  - {runbook: host-basics, cron: "*/10 * * * *", params: {host: nohost, disk_full_pct: "150"}}
  - {runbook: host-basics, cron: "*/10 * * * *", params: {host: here, disk_full_pct: "85"}}
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "runbot.yaml"), []byte(cfg), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "inventory.yaml"), []byte("hosts: {here: {transport: local}}\n"), 0o600))
	stdout, stderr, code := checkCmd(t, runbot, dir, "--config", "runbot.yaml")
	require.Equal(t, 1, code, "stdout: %s\nstderr: %s", stdout, stderr)
	require.Equal(t, `runbot.yaml:4:65: schedule 1: param host: unknown host "nohost" in inventory inventory.yaml (known: here)
runbot.yaml:4:88: schedule 1: param disk_full_pct: want an int from 1 to 100, got 150
`, stdout)
}

// TestServeCheckShowsTheLine: with --excerpts (the default at a
// terminal) each problem of serve --check is followed by its line, with a
// caret under the column.
func TestServeCheckShowsTheLine(t *testing.T) {
	runbot, _ := buildBinaries(t)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "runbot.yaml"),
		[]byte("listen: 127.0.0.1:8080\nstore: runbot.db\nschedules:\n  - runbook: dsik\n    cron: \"*/5 * * * *\"\n"), 0o600))
	stdout, _, code := checkCmd(t, runbot, dir, "--config", "runbot.yaml", "--excerpts")
	require.Equal(t, 1, code)
	require.Equal(t, "runbot.yaml:4:14: schedule 1: unknown runbook \"dsik\"\n"+
		"     4 |   - runbook: dsik\n"+
		"       |              ^\n", stdout)
}
