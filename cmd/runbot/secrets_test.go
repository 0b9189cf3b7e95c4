package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/store/storetest"
)

// plantedSecrets are a value for each kind of secret the config and the
// inventory name, and one for a runbook's secret param. None looks like a
// secret to the default patterns (no
// xoxb-, no password=), so only the config's own redaction can hide them.
var plantedSecrets = map[string]string{
	"slack.bot_token":            "plantbot-5e0c2d71a9",
	"slack.signing_secret":       restartSigning,
	"alerts.basic_auth.password": "plantbasic-81f3c0aa",
	"alerts.bearer_token":        "plantbearer-93e1f07b",
	"store password":             "plantstore-4c8a61d2",
	"web.link_secret":            "plantlink-2b7d94e6c1",
	"ssh passphrase":             "plantpass-c4a19e77",
	// A runbook's secret param: no config names it; the run is given it.
	"secret param": "plantparam-6d0e3b98f1",
}

// TestPlantedSecretsReachNoSink plants every secret runbot's config and
// inventory name in a command's output and in a param, gives the run a
// secret param that the command prints and the fix it proposes quotes,
// runs it through the real serve on PostgreSQL reached with a password
// (Slack, the report page and its postmortem, the logs) and through the
// CLI (show and history in every format, an export, run in both formats
// and its recording), and greps each for every secret.
func TestPlantedSecretsReachNoSink(t *testing.T) {
	r := newRestartRig(t)
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
		return path
	}
	var lines strings.Builder
	for kind, v := range plantedSecrets {
		fmt.Fprintf(&lines, "%s is %s\n", kind, v)
	}
	leak := write("leak.txt", lines.String())
	basic := write("basic", plantedSecrets["alerts.basic_auth.password"]+"\n")
	bearer := write("bearer", plantedSecrets["alerts.bearer_token"]+"\n")
	link := write("link", plantedSecrets["web.link_secret"]+"\n")
	pass := write("passphrase", plantedSecrets["ssh passphrase"]+"\n")
	abs, err := filepath.Abs("testdata")
	require.NoError(t, err)
	// The inventory names a key passphrase (of a host no run uses).
	inv := write("inventory.yaml", fmt.Sprintf(`hosts:
  here: {transport: local}
  bastion: {address: 192.0.2.10, user: ops, identity_file: %s/id, passphrase_file: %s}
`, dir, pass))
	cfg, err := os.ReadFile(r.cfg)
	require.NoError(t, err)
	// The store is PostgreSQL, reached with a password: the test cluster
	// trusts its socket, so the password is only carried along, and must
	// show nowhere.
	sqlite := r.db
	dsn, err := url.Parse(storetest.PostgresDatabase(t))
	require.NoError(t, err)
	dsn.User = url.UserPassword(dsn.User.Username(), plantedSecrets["store password"])
	r.db = dsn.String()
	cfg = bytes.Replace(cfg, []byte("store: "+sqlite), []byte("store: {env: T_STORE}"), 1)
	cfg = bytes.Replace(cfg, []byte(abs+"/local.yaml"), []byte(inv), 1)
	cfg = bytes.Replace(cfg, []byte(abs+"/restartrunbooks"), []byte(abs+"/secretrunbooks"), 1)
	cfg = fmt.Appendf(cfg, `alerts:
  bearer_token: {file: %s}
  basic_auth: {user: am, password: {file: %s}}
web:
  url: http://127.0.0.1:%d/
  link_secret: {file: %s}
  trust_header: X-Forwarded-User
  trusted_proxies: [127.0.0.1]
`, bearer, basic, r.port, link)
	require.NoError(t, os.WriteFile(r.cfg, cfg, 0o600))
	secretEnv := []string{"T_BOT=" + plantedSecrets["slack.bot_token"], "T_SIGN=" + restartSigning, "T_STORE=" + r.db}
	r.env = secretEnv
	r.start()

	// The link secret is also typed into a param, which Slack, the logs
	// and history show.
	r.command("leak " + leak + " " + plantedSecrets["web.link_secret"] + " " + plantedSecrets["secret param"])
	var runID string
	r.until("the run ends and its message says what it found, and shows the fix it proposes", func() bool {
		for _, run := range r.runs()[""] {
			if run.Status.Final() && run.Message != nil && r.says(run.Message.ID, "The command printed") && r.says(run.Message.ID, "echo rotating") {
				runID = run.ID
			}
		}
		return runID != ""
	})
	r.stop()
	require.NotEmpty(t, runID)

	sinks := map[string]string{"serve's log": r.logs.String()}
	var slack strings.Builder
	for _, c := range r.rec.Calls() {
		// What runbot sends, not how it signs in: the bot token is the
		// credential of every call.
		fmt.Fprintf(&slack, "%s", c.Method)
		for k, vs := range c.Form {
			if k != "token" {
				fmt.Fprintf(&slack, " %s=%s", k, strings.Join(vs, ","))
			}
		}
		fmt.Fprintf(&slack, " %s\n", bytes.ReplaceAll(c.Body, []byte("token="+plantedSecrets["slack.bot_token"]), nil))
	}
	sinks["Slack calls"] = slack.String()

	// The pages: serve again, as the proxy's user.
	r.start()
	for name, path := range map[string]string{"report page": "/runs/" + runID, "postmortem": "/runs/" + runID + "/postmortem.md"} {
		req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d%s", r.port, path), nil)
		require.NoError(t, err)
		req.Header.Set("X-Forwarded-User", "alice")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close() // read in full
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", name, body)
		sinks[name] = string(body)
	}
	r.stop()

	// The CLI, given the config as the service has it.
	cli := func(args ...string) (string, string) {
		t.Helper()
		cmd := exec.Command(r.runbot, append([]string{"--config", r.cfg, "--store", r.db}, args...)...)
		cmd.Env = append(os.Environ(), secretEnv...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		if err != nil && (!errors.As(err, &exit) || exit.ExitCode() != exitCritical) {
			require.NoError(t, err, "runbot %s: %s", strings.Join(args, " "), stderr.String())
		}
		return stdout.String(), stderr.String()
	}
	for _, args := range [][]string{
		{"show", runID}, {"show", runID, "--format", "json"}, {"show", runID, "--format", "markdown"},
		{"history"}, {"history", "--format", "json"},
	} {
		out, _ := cli(args...)
		sinks["runbot "+strings.Join(args, " ")] = out
	}
	export := filepath.Join(dir, "export")
	cli("show", runID, "--export", export)
	record := filepath.Join(dir, "record")
	for _, format := range []string{"text", "json"} {
		args := []string{"--runbooks", abs + "/secretrunbooks", "run", "leak", "--inventory", inv, "-p", "file=" + leak, "-p", "note=" + plantedSecrets["web.link_secret"],
			"-p", "cred=" + plantedSecrets["secret param"], "--format", format}
		if format == "json" {
			args = append(args, "--record", record)
		}
		out, _ := cli(args...)
		sinks["runbot run --format "+format] = out
	}
	explain, _ := cli("--runbooks", abs+"/secretrunbooks", "explain", "leak", "--inventory", inv, "-p", "file="+leak, "-p", "cred="+plantedSecrets["secret param"])
	sinks["runbot explain"] = explain
	for _, root := range []string{export, record} {
		require.NoError(t, filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(path)
			sinks["recording "+strings.TrimPrefix(path, dir)] = string(b)
			return err
		}))
	}

	for sink, text := range sinks {
		for kind, v := range plantedSecrets {
			require.NotContains(t, text, v, "%s shows the %s", sink, kind)
		}
	}
	for _, sink := range []string{"Slack calls", "report page", "postmortem", "runbot show " + runID, "runbot run --format text", "runbot run --format json"} {
		require.Contains(t, sinks[sink], "[redacted]", "%s shows the command's output, redacted", sink)
	}
	require.Contains(t, sinks["serve's log"], "[redacted]", "the log shows the run's params, redacted")
	require.Contains(t, sinks["runbot explain"], "param cred = [redacted]")
	require.Contains(t, sinks["runbot explain"], "echo rotating [redacted]")
	for _, sink := range []string{"Slack calls", "report page", "runbot show " + runID + " --format json"} {
		require.Contains(t, sinks[sink], "echo rotating [redacted]", "%s shows the proposed fix, its secret param hidden", sink)
	}

	// Without the config, the CLI cannot know these secrets, and says so.
	cmd := exec.Command(r.runbot, "--store", r.db, "show", runID)
	cmd.Env = append(os.Environ(), "RUNBOT_CONFIG=")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "no --config (or RUNBOT_CONFIG)")
}
