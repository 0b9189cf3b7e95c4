//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/slackchat/slackrec"
	"github.com/runbot/runbot/test/e2e/testhost"
)

// guideBlock is one fenced block of docs/deploy.md that the test uses.
type guideBlock struct {
	Kind string // "deploy-step" or "alertmanager-receiver"
	Name string
	Line int
	Body string
}

// readGuide extracts, in order, the blocks fenced as ```sh deploy-step
// NAME (run as root on the host) and ```yaml alertmanager-receiver.
func readGuide(t *testing.T, path string) (steps []guideBlock, receiver string) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	var cur *guideBlock
	var body strings.Builder
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		switch {
		case cur == nil && strings.HasPrefix(text, "```"):
			fields := strings.Fields(strings.TrimPrefix(text, "```"))
			switch {
			case len(fields) == 3 && fields[0] == "sh" && fields[1] == "deploy-step":
				cur = &guideBlock{Kind: fields[1], Name: fields[2], Line: line}
			case len(fields) == 2 && fields[0] == "yaml" && fields[1] == "alertmanager-receiver":
				cur = &guideBlock{Kind: fields[1], Line: line}
			case len(fields) >= 2 && slices.Contains(fields, "deploy-step"):
				t.Fatalf("%s:%d: a deploy step is fenced as ```sh deploy-step NAME, got %q", path, line, text)
			default:
				// A block for the reader only: skip to its end.
				cur = &guideBlock{Kind: "prose", Line: line}
			}
			body.Reset()
		case cur != nil && text == "```":
			cur.Body = body.String()
			switch cur.Kind {
			case "deploy-step":
				steps = append(steps, *cur)
			case "alertmanager-receiver":
				receiver = cur.Body
			}
			cur = nil
		case cur != nil:
			body.WriteString(text + "\n")
		}
	}
	require.NoError(t, sc.Err())
	require.Nil(t, cur, "%s: a block is not closed", path)
	return steps, receiver
}

const (
	guideBotToken  = "xoxb-deploy-guide"
	guideSigning   = "deploy-guide-signing-secret"
	guideAlert     = "deploy-guide-alert-token"
	guideChannel   = "C0INCIDENTS" // the shipped config's channel, kept
	guideApprover  = "U01ALICE"    // in the shipped config's sre-oncall
	guideRunbotDir = "/root/runbot-release"
)

// TestDeployGuide follows docs/deploy.md on a pristine test host: every
// deploy-step block, in order, as root, with the by-hand steps in between
// done as the guide says to do them; then a real Alertmanager, configured
// from the guide's receiver snippet, sends an alert, and a signed slash
// command asks for a run: both are recorded in runbot's store and posted
// to the recording Slack. Then it follows the guide's "Running without
// Slack" on the same host (withoutSlackGuide). A step renamed, added or
// removed in the guide fails the test until the test knows it.
func TestDeployGuide(t *testing.T) {
	steps, receiver := readGuide(t, "../../docs/deploy.md")
	var names []string
	for _, s := range steps {
		names = append(names, s.Name)
	}
	require.Equal(t, []string{"env", "install", "user", "ssh", "inventory", "secrets", "config", "check", "unit", "upgrade"}, names,
		"the guide's steps changed: teach TestDeployGuide what to do around them")
	require.NotEmpty(t, receiver, "docs/deploy.md has no ```yaml alertmanager-receiver block")

	c := testhost.Up(t, 1)
	h := c.Hosts[0]
	work := t.TempDir()

	// Step 2's by-hand part: make release, and copy dist/, deploy/ and
	// examples/ to the host.
	c.Step(t, h, "make release and copy it to the host")
	release := filepath.Join(work, "release")
	rel := exec.Command("bash", "scripts/release.sh", filepath.Join(release, "dist"))
	rel.Dir = "../.."
	rel.Env = append(os.Environ(), "PLATFORMS=linux/"+runtime.GOARCH)
	out, err := rel.CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, dir := range []string{"deploy", "examples"} {
		out, err := exec.Command("cp", "-r", filepath.Join("../..", dir), filepath.Join(release, dir)).CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	h.Upload(t, release, guideRunbotDir)

	// Slack, for runbot on the host: the recording Slack, reached through
	// a proxy on the test network's gateway (the recorder listens on
	// loopback).
	rec := slackrec.New()
	t.Cleanup(rec.Close)
	slackURL := proxyToHosts(t, rec.APIURL())

	env := map[string]string{
		"RUNBOT_TARGETS": h.Address, "SLACK_BOT_TOKEN": guideBotToken,
		"SLACK_SIGNING_SECRET": guideSigning, "RUNBOT_ALERT_TOKEN": guideAlert,
	}
	var prelude strings.Builder
	prelude.WriteString("set -euo pipefail\ncd /root\n")
	for _, k := range slices.Sorted(maps.Keys(env)) {
		fmt.Fprintf(&prelude, "export %s=%q\n", k, env[k])
	}
	runbotURL := "http://" + net.JoinHostPort(h.Address, "8080")
	for _, s := range steps {
		c.Step(t, h, "docs/deploy.md:%d: deploy-step %s", s.Line, s.Name)
		out := h.Run(t, "bash -c "+shellQuote(prelude.String()+s.Body))
		t.Logf("docs/deploy.md:%d: deploy-step %s:\n%s", s.Line, s.Name, out)
		switch s.Name {
		case "check":
			// With its secrets in place the check prints no problem (not
			// even a warning) on stdout; its summary is on stderr.
			require.Empty(t, strings.TrimSpace(out), "serve --check --secrets found problems")
		case "user":
			// The guide's way for a key the targets already trust: put it
			// at /etc/runbot/ssh/id_ed25519 before the ssh step, which
			// keeps it. The test hosts' root trusts the cluster's key (and
			// their authorized_keys is read-only, so the by-hand "add the
			// public key to authorized_keys" cannot be done here).
			key, err := os.ReadFile(c.Key)
			require.NoError(t, err)
			putFile(t, h, "/etc/runbot/ssh/id_ed25519", string(key))
			h.Run(t, "chown runbot:runbot /etc/runbot/ssh/id_ed25519 && chmod 0600 /etc/runbot/ssh/id_ed25519 && "+
				"ssh-keygen -y -f /etc/runbot/ssh/id_ed25519 > /etc/runbot/ssh/id_ed25519.pub && chown runbot:runbot /etc/runbot/ssh/id_ed25519.pub")
		case "inventory":
			// By hand: the inventory of your hosts. Here: this host and its
			// deployment, with the service user's key and known_hosts.
			inv, err := os.ReadFile(c.Inventory)
			require.NoError(t, err)
			text := strings.ReplaceAll(string(inv), c.Key, "/etc/runbot/ssh/id_ed25519")
			text = strings.ReplaceAll(text, c.KnownHosts, "/etc/runbot/ssh/known_hosts")
			putFile(t, h, "/etc/runbot/inventory.yaml", text)
		case "config":
			// By hand: edit runbot.yaml for your workspace and deployments.
			cfg := h.Run(t, "cat /etc/runbot/runbot.yaml")
			for _, r := range [][2]string{
				// Alertmanager and the slash command reach runbot from the
				// test network, not through a proxy on the host.
				{"listen: 127.0.0.1:8080", "listen: " + net.JoinHostPort(h.Address, "8080")},
				{"params: {deployment: dsv4}", "params: {deployment: " + h.Deployment + "}"},
				// Slack is the recording one.
				{"  command: /runbot\n", "  command: /runbot\n  api_url: " + slackURL + "\n"},
			} {
				require.Contains(t, cfg, r[0], "deploy/runbot.yaml changed: update the by-hand edit of TestDeployGuide")
				cfg = strings.Replace(cfg, r[0], r[1], 1)
			}
			putFile(t, h, "/etc/runbot/runbot.yaml", cfg)
		case "unit":
			require.Equal(t, "active", strings.TrimSpace(h.Run(t, "systemctl is-active runbot")))
		}
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("runbot journal:\n%s", h.Journal(t, "runbot", 80))
		}
	})

	c.Step(t, h, "runbot answers /readyz and /metrics with its dependencies up")
	body := httpGet(t, runbotURL+"/readyz")
	require.Equal(t, "ok\n", body)
	metrics := httpGet(t, runbotURL+"/metrics")
	require.Contains(t, metrics, `runbot_dependency_up{dependency="slack"} 1`)
	require.Contains(t, metrics, `runbot_dependency_up{dependency="store"} 1`)

	c.Step(t, h, "a real Alertmanager, configured by the guide's receiver snippet, sends an alert")
	tokenFile := filepath.Join(work, "runbot-token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(guideAlert), 0o600))
	amCfg := receiver
	for _, r := range [][2]string{
		{"https://runbot.example.com", runbotURL},
		{"/etc/alertmanager/runbot-token", tokenFile},
	} {
		require.Contains(t, amCfg, r[0], "the guide's receiver snippet changed: update TestDeployGuide")
		amCfg = strings.ReplaceAll(amCfg, r[0], r[1])
	}
	am := startAlertmanagerWith(t, work, amCfg)
	postAlert(t, am, h.Deployment, false)
	// Alertmanager's default group_wait is 30s, and the wedge runbook
	// probes at its production defaults.
	_, err = rec.WaitTimeout(5*time.Minute, func(calls []slackrec.Call) bool {
		return anyText(calls, "chat.postMessage", "SGLang prefill/decode — alive but not working?")
	})
	require.NoError(t, err, "the alert's run is posted to the channel")
	require.Equal(t, guideChannel, rec.Calls("chat.postMessage")[0].Form.Get("channel"))

	c.Step(t, h, "a signed slash command runs host-basics")
	slash(t, runbotURL, url.Values{
		"command": {"/runbot"}, "text": {"run host-basics host=" + h.Name},
		"user_id": {guideApprover}, "user_name": {"alice"}, "channel_id": {guideChannel}, "team_id": {"T0TEAM"},
		"trigger_id":   {strconv.FormatInt(time.Now().UnixNano(), 10)},
		"response_url": {strings.Replace(rec.ResponseURL("slash"), strings.TrimSuffix(rec.APIURL(), "/"), strings.TrimSuffix(slackURL, "/"), 1)},
	})
	_, err = rec.WaitTimeout(2*time.Minute, func(calls []slackrec.Call) bool {
		return anyText(calls, "chat.postMessage", "Host basics — disk, memory, load and clock")
	})
	require.NoError(t, err, "the slash command's run is posted")

	c.Step(t, h, "both runs are in the store")
	testhost.Eventually(t, 2*time.Minute, "runbot history lists both runs", func() (bool, string) {
		hist := h.Run(t, "runbot history --format json --store /var/lib/runbot/runbot.db")
		return strings.Contains(hist, `"sglang-pd-wedge"`) && strings.Contains(hist, `"host-basics"`) && strings.Contains(hist, `"alert"`) && strings.Contains(hist, `"trigger":"chat"`), hist
	})

	reloadGuide(t, c, h, runbotURL, func(text string) {
		slash(t, runbotURL, url.Values{
			"command": {"/runbot"}, "text": {text},
			"user_id": {guideApprover}, "user_name": {"alice"}, "channel_id": {guideChannel}, "team_id": {"T0TEAM"},
			"trigger_id":   {strconv.FormatInt(time.Now().UnixNano(), 10)},
			"response_url": {strings.Replace(rec.ResponseURL("slash"), strings.TrimSuffix(rec.APIURL(), "/"), strings.TrimSuffix(slackURL, "/"), 1)},
		})
	})

	run := withoutSlackGuide(t, c, h, work, amCfg)
	for _, call := range rec.Calls() {
		require.NotContains(t, call.Form.Encode(), run, "runbot without a slack: block called Slack (%s) about run %s", call.Method, run)
	}
}

// reloadProbe is a runbook the guide's "Reloading" paragraph has the
// operator add: it runs on the host it is given.
const reloadProbe = `name: reload-probe
title: Reload probe
params:
  host: {type: host, required: true}
steps:
  - {id: hello, check: command, target: host, timeout: 30s, with: {cmd: 'echo reloaded-probe'}}
findings:
  - {id: said, severity: info, when: 'steps.hello.stdout != ""', summary: The probe ran.}
`

// reloadGuide does what docs/deploy.md's "Reloading" paragraph says, on
// the service the guide installed: systemctl reload with a new runbook
// makes it runnable from Slack, and with a broken one keeps the running
// set and says why, each time in the same process, still active.
func reloadGuide(t *testing.T, c *testhost.Cluster, h *testhost.Host, runbotURL string, slashText func(string)) {
	t.Helper()
	pid := h.UnitState(t, "runbot")["MainPID"]
	require.NotEqual(t, "0", pid)
	journalHas := func(what, text string) {
		t.Helper()
		testhost.Eventually(t, time.Minute, "the journal says "+what, func() (bool, string) {
			j := h.Run(t, "journalctl -u runbot --no-pager -o cat")
			return strings.Contains(j, text), j
		})
	}
	stillServing := func() {
		t.Helper()
		testhost.Eventually(t, time.Minute, "runbot is active in the same process", func() (bool, string) {
			st := h.UnitState(t, "runbot")
			return st["ActiveState"] == "active" && st["SubState"] == "running" && st["MainPID"] == pid, fmt.Sprint(st)
		})
		require.Equal(t, "ok\n", httpGet(t, runbotURL+"/readyz"))
	}

	c.Step(t, h, "systemctl reload runbot with a new runbook")
	putNewFile(t, h, "/etc/runbot/runbooks/reload-probe.yaml", reloadProbe)
	h.Run(t, "systemctl reload runbot")
	journalHas("reloaded", `"msg":"config reloaded"`)
	stillServing()
	require.Contains(t, httpGet(t, runbotURL+"/metrics"), "runbot_config_reload_success 1")
	slashText("run reload-probe host=" + h.Name)
	testhost.Eventually(t, 2*time.Minute, "the new runbook's run is in the store", func() (bool, string) {
		hist := h.Run(t, "runbot history --format json --store /var/lib/runbot/runbot.db")
		return strings.Contains(hist, `"reload-probe"`), hist
	})

	c.Step(t, h, "systemctl reload runbot with a broken runbook")
	putNewFile(t, h, "/etc/runbot/runbooks/broken.yaml", "name: broken\nbogus: 1\nsteps: []\n")
	h.Run(t, "systemctl reload runbot")
	journalHas("the reload failed", "config reload failed: kept the running config, inventory and runbooks")
	journalHas("where the problem is", "/etc/runbot/runbooks/broken.yaml:2:1: ")
	stillServing()
	require.Contains(t, httpGet(t, runbotURL+"/metrics"), "runbot_config_reload_success 0")

	c.Step(t, h, "systemctl reload runbot once the runbook is fixed")
	h.Run(t, "rm /etc/runbot/runbooks/broken.yaml")
	h.Run(t, "systemctl reload runbot")
	testhost.Eventually(t, time.Minute, "the reload succeeds again", func() (bool, string) {
		m := httpGet(t, runbotURL+"/metrics")
		return strings.Contains(m, "runbot_config_reload_success 1"), m
	})
	stillServing()
}

// putNewFile writes text to a new file at path on the host, readable by
// the runbot group as the guide's step 4 makes /etc/runbot.
func putNewFile(t *testing.T, h *testhost.Host, path, text string) {
	t.Helper()
	h.Run(t, fmt.Sprintf("echo %s | base64 -d > %s && chown root:runbot %s && chmod 0640 %s",
		base64.StdEncoding.EncodeToString([]byte(text)), path, path, path))
}

// proxyToHosts serves target on the test network's gateway, where the
// test hosts reach the machine running the test, and returns its URL.
func proxyToHosts(t *testing.T, target string) string {
	t.Helper()
	u, err := url.Parse(target)
	require.NoError(t, err)
	subnet := os.Getenv("RUNBOT_TESTHOST_SUBNET")
	if subnet == "" {
		subnet = "10.200.0"
	}
	ln, err := net.Listen("tcp", subnet+".1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }() // ends when closed below
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String() + u.Path
}

// putFile writes text to path on the host, keeping the file's owner and
// mode (it exists: the guide's step installed it).
func putFile(t *testing.T, h *testhost.Host, path, text string) {
	t.Helper()
	h.Run(t, fmt.Sprintf("echo %s | base64 -d > %s", base64.StdEncoding.EncodeToString([]byte(text)), path))
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func httpGet(t *testing.T, u string) string {
	t.Helper()
	resp, err := http.Get(u)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	var b bytes.Buffer
	_, err = b.ReadFrom(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", u, b.String())
	return b.String()
}

// slash posts a slash command signed as Slack signs it.
func slash(t *testing.T, runbotURL string, form url.Values) {
	t.Helper()
	req, err := slackrec.SignedPost(t.Context(), runbotURL+"/slack/commands", guideSigning, form)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close() // only the status matters
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// startAlertmanagerWith runs a real Alertmanager with the given config on
// the test machine and returns its URL once it is ready.
func startAlertmanagerWith(t *testing.T, dir, cfg string) string {
	t.Helper()
	bin, err := exec.LookPath("alertmanager")
	if err != nil {
		gopath, _ := exec.Command("go", "env", "GOPATH").Output()
		bin = filepath.Join(strings.TrimSpace(string(gopath)), "bin", "alertmanager")
	}
	_, err = os.Stat(bin)
	require.NoError(t, err, "the alertmanager binary is missing: make test-deps")
	path := filepath.Join(dir, "alertmanager.yml")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o600))
	addr := freeAddr(t)
	logs := &lockedBuffer{}
	cmd := exec.Command(bin, "--config.file="+path, "--storage.path="+filepath.Join(dir, "am-data"),
		"--web.listen-address="+addr, "--cluster.listen-address=")
	cmd.Stdout, cmd.Stderr = logs, logs
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("alertmanager log:\n%s", logs.String())
		}
	})
	am := "http://" + addr
	testhost.Eventually(t, 30*time.Second, "alertmanager is ready", func() (bool, string) {
		resp, err := http.Get(am + "/-/ready")
		if err != nil {
			return false, err.Error()
		}
		defer func() { _ = resp.Body.Close() }() // only the status matters
		return resp.StatusCode == 200, resp.Status
	})
	return am
}
