//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/slackchat/slackrec"
	"github.com/runbot/runbot/store/storetest"
	"github.com/runbot/runbot/test/e2e/testhost"
)

const (
	storySigningSecret = "e2e-signing-secret"
	storyBotToken      = "xoxb-e2e-bot-token"
	storyAlertToken    = "e2e-alert-token"
	storyLinkSecret    = "e2e-report-link-secret"
	storyChannel       = "C0OPS"
	approver           = "U0BOB"
	stranger           = "U0MALLORY"
)

// fullReportLink finds the Full report link in a Slack message's text.
var fullReportLink = regexp.MustCompile(`<(http://[^|>]+)\|Full report>`)

// lockedBuffer collects a process's output from several goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { _ = l.Close() }() // only the address was wanted
	return l.Addr().String()
}

// startServe runs `runbot serve` against the cluster, with Slack at rec
// and its store in dir.
func startServe(t *testing.T, c *testhost.Cluster, rec *slackrec.Recorder, dir string) (baseURL string, logs *lockedBuffer) {
	t.Helper()
	return startReplica(t, c, rec, dir, "runbot serve", filepath.Join(dir, "runbot.db"))
}

// startReplica runs one `runbot serve` named name (for its log) against
// the cluster, with Slack at rec and the store at storeLoc: a SQLite path,
// or a postgres:// URL that other replicas share.
func startReplica(t *testing.T, c *testhost.Cluster, rec *slackrec.Recorder, dir, name, storeLoc string) (baseURL string, logs *lockedBuffer) {
	t.Helper()
	addr := freeAddr(t)
	cfg := fmt.Sprintf(`
listen: %s
store: %s
inventory: %s
log: {format: text, level: info}
groups: {sre-oncall: [%s]}
slack:
  mode: http
  bot_token: {env: E2E_SLACK_BOT_TOKEN}
  signing_secret: {env: E2E_SLACK_SIGNING_SECRET}
  channel: %s
  api_url: %s
  authorize:
    - {runbooks: ["*"], users: [%s, %s]}
web:
  url: http://%s/
  link_secret: {env: E2E_LINK_SECRET}
alerts:
  bearer_token: {env: E2E_ALERT_TOKEN}
  routes:
    - match: {alertname: SGLangRequestsHanging}
      runbook: sglang-pd-wedge
      params:
        deployment: '{{ .labels.deployment }}'
`, addr, storeLoc, c.Inventory, approver, storyChannel, rec.APIURL(), approver, stranger, addr)
	env := []string{"E2E_SLACK_BOT_TOKEN=" + storyBotToken, "E2E_SLACK_SIGNING_SECRET=" + storySigningSecret, "E2E_ALERT_TOKEN=" + storyAlertToken, "E2E_LINK_SECRET=" + storyLinkSecret}
	logs = runServe(t, c, dir, name, addr, cfg, env...)
	return "http://" + addr, logs
}

// runServe runs `runbot serve` with the config cfg (written to dir) and
// the extra environment env until the test ends, and waits until it is
// ready at listen, the address cfg gives. Its log joins the cluster's
// failure report under name.
func runServe(t *testing.T, c *testhost.Cluster, dir, name, listen, cfg string, env ...string) *lockedBuffer {
	t.Helper()
	slug := strings.ReplaceAll(name, " ", "-")
	path := filepath.Join(dir, slug+".yaml")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o600))
	cmd := exec.Command(runbotBinary(t), "serve", "--config", path)
	cmd.Env = append(os.Environ(), env...)
	logs := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	require.NoError(t, cmd.Start())
	logPath := filepath.Join(dir, slug+".log")
	c.AttachLog(name, logPath)
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
		}
		_ = os.WriteFile(logPath, []byte(logs.String()), 0o600)
		if t.Failed() {
			t.Logf("%s log:\n%s", name, logs.String())
		}
	})
	testhost.Eventually(t, 30*time.Second, name+" is ready", func() (bool, string) {
		resp, err := http.Get("http://" + listen + "/readyz")
		if err != nil {
			return false, err.Error()
		}
		defer func() { _ = resp.Body.Close() }() // only the status matters
		return resp.StatusCode == 200, resp.Status
	})
	return logs
}

// startAlertmanager runs a real Alertmanager whose receiver is runbot: one
// webhook per runbot URL, as for replicas that each get every notification.
func startAlertmanager(t *testing.T, dir string, runbotURLs ...string) string {
	t.Helper()
	var hooks strings.Builder
	for _, u := range runbotURLs {
		fmt.Fprintf(&hooks, `
      - url: %s/alerts/alertmanager
        send_resolved: true
        http_config:
          authorization: {type: Bearer, credentials: %s}`, u, storyAlertToken)
	}
	return startAlertmanagerWith(t, dir, `
route:
  receiver: runbot
  group_by: [alertname, deployment]
  group_wait: 200ms
  group_interval: 2s
  repeat_interval: 4s
receivers:
  - name: runbot
    webhook_configs:`+hooks.String()+"\n")
}

func postAlert(t *testing.T, am, deployment string, resolved bool) {
	t.Helper()
	alert := map[string]any{
		"labels":      map[string]string{"alertname": "SGLangRequestsHanging", "deployment": deployment, "severity": "critical"},
		"annotations": map[string]string{"summary": "chat completions time out while /health is 200"},
		"startsAt":    time.Now().Add(-time.Minute).UTC().Format(time.RFC3339),
	}
	if resolved {
		alert["endsAt"] = time.Now().Add(-time.Second).UTC().Format(time.RFC3339)
	}
	body, err := json.Marshal([]any{alert})
	require.NoError(t, err)
	resp, err := http.Post(am+"/api/v2/alerts", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	_ = resp.Body.Close() // only the status matters
	require.Equal(t, 200, resp.StatusCode)
}

// clickButton posts a block_actions payload signed exactly as Slack signs.
func clickButton(t *testing.T, runbotURL, user, actionID, value, channel, ts, responseURL string) {
	t.Helper()
	req, err := slackrec.Click{User: user, Channel: channel, TS: ts, ActionID: actionID, Value: value, ResponseURL: responseURL}.Request(t.Context(), runbotURL, storySigningSecret)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close() // only the status matters
	require.Equal(t, 200, resp.StatusCode)
}

// approveButton finds the newest Approve button posted: its value (plan id
// and hash), channel and message ts.
func approveButton(calls []slackrec.Call) (value, channel, ts string, ok bool) {
	for i := len(calls) - 1; i >= 0; i-- {
		c := calls[i]
		for _, b := range c.Blocks() {
			els, _ := b["elements"].([]any)
			for _, e := range els {
				m, _ := e.(map[string]any)
				// The run's message is updated in place (chat.update),
				// which names its ts.
				if m["action_id"] == "runbot_approve" && c.Form.Get("ts") != "" {
					return fmt.Sprint(m["value"]), c.Form.Get("channel"), c.Form.Get("ts"), true
				}
			}
		}
	}
	return "", "", "", false
}

func anyText(calls []slackrec.Call, method, text string) bool {
	for _, c := range calls {
		if (method == "" || c.Method == method) && strings.Contains(c.Text(), text) {
			return true
		}
	}
	return false
}

// TestIncidentStory is the whole incident against real parts: systemd and
// journald hosts over SSH, a real Alertmanager, runbot serve, Slack at the
// other end (slacktest), approval by signed interaction, the fix, the
// verification, the replayed burst, and the resolved alert.
func TestIncidentStory(t *testing.T) {
	c := testhost.Up(t, 1)
	dir := t.TempDir()
	rec := slackrec.New()
	t.Cleanup(rec.Close)

	c.Step(t, nil, "runbot serve and a real Alertmanager are running")
	runbotURL, _ := startServe(t, c, rec, dir)
	incidentStory(t, c, rec, dir, runbotURL)
}

// TestIncidentStoryReplicas is the same story with two runbot serve
// replicas sharing one PostgreSQL database (a real server, the Debian
// package): Alertmanager notifies both, the stranger clicks on the first
// and the approver on the second, and still there is one run, one message,
// one remediation and one restart of each engine.
func TestIncidentStoryReplicas(t *testing.T) {
	c := testhost.Up(t, 1)
	dir := t.TempDir()
	rec := slackrec.New()
	t.Cleanup(rec.Close)

	c.Step(t, nil, "two runbot serve replicas on one PostgreSQL database and a real Alertmanager are running")
	dsn := storetest.PostgresDatabase(t)
	a, _ := startReplica(t, c, rec, dir, "runbot serve A", dsn)
	b, _ := startReplica(t, c, rec, dir, "runbot serve B", dsn)
	incidentStory(t, c, rec, dir, a, b)
}

// incidentStory runs the incident against the runbot replicas at urls
// (one or more sharing a store): Alertmanager notifies every one of them;
// the stranger's click goes to the first, the approver's to the last.
func incidentStory(t *testing.T, c *testhost.Cluster, rec *slackrec.Recorder, dir string, urls ...string) {
	t.Helper()
	h := c.Hosts[0]
	am := startAlertmanager(t, dir, urls...)
	strangerURL, approverURL := urls[0], urls[len(urls)-1]
	since := strings.TrimSpace(h.Run(t, "date +%s"))
	t.Cleanup(func() {
		if t.Failed() {
			// What runbot told Slack is what an operator would read first.
			for _, call := range rec.Calls() {
				t.Logf("slack %s: %s", call.Method, call.Text())
			}
		}
	})

	c.Step(t, h, "load runs; the abort burst wedges decode")
	startLoad(t, h)
	testhost.Eventually(t, 30*time.Second, "decode runs batches", func() (bool, string) {
		return strings.Contains(h.Journal(t, testhost.UnitDecode, 200), "Decode batch"), ""
	})
	require.Contains(t, h.Fault(t, "decode", `{"fault":"pd-wedge"}`), `"wedged":true`)

	c.Step(t, nil, "the alert reaches runbot through Alertmanager; runbot diagnoses pd_transfer_wedge over SSH")
	postAlert(t, am, h.Deployment, false)
	calls, err := rec.WaitTimeout(3*time.Minute, func(calls []slackrec.Call) bool {
		_, _, _, ok := approveButton(calls)
		return ok && anyText(calls, "", "PD transfer wedge")
	})
	require.NoError(t, err, "no diagnosis with approval buttons in Slack")
	value, channel, ts, _ := approveButton(calls)
	require.True(t, anyText(calls, "", "disable_overlap_and_restart"))
	require.True(t, anyText(calls, "", "add --disable-overlap-schedule"))

	c.Step(t, nil, "a stranger's click is refused and changes nothing")
	clickButton(t, strangerURL, stranger, "runbot_approve", value, channel, ts, rec.ResponseURL("stranger"))
	_, err = rec.WaitTimeout(30*time.Second, func(calls []slackrec.Call) bool {
		for _, c := range calls {
			if (c.Method == "response_url" || c.Method == "chat.postEphemeral") && strings.Contains(c.Text()+string(c.Body), "not an approver") {
				return true
			}
		}
		return false
	})
	require.NoError(t, err, "the stranger gets an ephemeral refusal")
	require.NotContains(t, h.Run(t, "cat "+testhost.DecodeScript), "--disable-overlap-schedule")

	c.Step(t, nil, "the approver's signed click applies the fix, and runbot verifies it")
	clickButton(t, approverURL, approver, "runbot_approve", value, channel, ts, rec.ResponseURL("approver"))
	_, err = rec.WaitTimeout(3*time.Minute, func(calls []slackrec.Call) bool {
		return anyText(calls, "chat.update", "verified: the symptom is gone")
	})
	require.NoError(t, err, "no verified remediation in Slack")
	for _, script := range []string{testhost.PrefillScript, testhost.DecodeScript} {
		require.Contains(t, h.Run(t, "cat "+script), "--disable-overlap-schedule")
	}
	pid := h.UnitState(t, testhost.UnitDecode)["MainPID"]
	require.Contains(t, h.Run(t, "tr '\\0' ' ' < /proc/"+pid+"/cmdline"), "--disable-overlap-schedule")

	c.Step(t, nil, "the Full report link in the Slack message opens the run's page, on every replica")
	var link string
	for _, call := range rec.Calls("chat.update") {
		if m := fullReportLink.FindStringSubmatch(call.Text()); m != nil && strings.Contains(call.Text(), "verified: the symptom is gone") {
			link = m[1]
		}
	}
	require.NotEmpty(t, link, "the verified run message links to its report")
	for _, u := range urls {
		// The link names the replica that posted it; any replica on the
		// same database and link secret serves it.
		at, err := url.Parse(link)
		require.NoError(t, err)
		base, err := url.Parse(u)
		require.NoError(t, err)
		at.Host = base.Host
		resp, err := http.Get(at.String())
		require.NoError(t, err)
		page, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close() // read in full
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", at, page)
		for _, want := range []string{"pd_transfer_wedge", "--disable-overlap-schedule", approver, "disable_overlap_and_restart"} {
			require.Contains(t, string(page), want, "the report page on %s", base.Host)
		}
		require.NotContains(t, string(page), storyBotToken)
	}

	c.Step(t, h, "the replayed burst does not wedge decode")
	require.Contains(t, h.Fault(t, "decode", `{"fault":"pd-wedge"}`), `"wedged":false`)

	c.Step(t, nil, "Alertmanager sends resolved; runbot closes the thread")
	postAlert(t, am, h.Deployment, true)
	_, err = rec.WaitTimeout(2*time.Minute, func(calls []slackrec.Call) bool {
		for _, c := range calls {
			if c.Method == "chat.postMessage" && c.Form.Get("thread_ts") != "" && strings.Contains(c.Text(), "resolved") {
				return true
			}
		}
		return false
	})
	require.NoError(t, err, "no resolution in the thread")

	c.Step(t, nil, "one run, one message, one remediation, one restart of each engine")
	var top []string
	for _, call := range rec.Calls() {
		if call.Method == "chat.postMessage" && call.Form.Get("thread_ts") == "" {
			top = append(top, call.Text())
		}
	}
	require.Len(t, top, 1, "one message in the channel for the one alert, whichever replicas got it: %q", top)
	for _, unit := range []string{testhost.UnitPrefill, testhost.UnitDecode} {
		starts := h.Run(t, fmt.Sprintf("journalctl -u %s --since @%s --no-pager -o cat | grep -c '^Started ' || true", unit, since))
		require.Equal(t, "1", strings.TrimSpace(starts), "%s was restarted once", unit)
	}

	c.Step(t, nil, "/metrics tells the operator what happened")
	total := func(name, labels string) float64 {
		var sum float64
		for _, u := range urls {
			sum += scrape(t, u)[name][labels]
		}
		return sum
	}
	require.Positive(t, total("runbot_ssh_dials_total", `host="`+h.Name+`",outcome="ok"`), "SSH connections to the test host")
	require.Positive(t, total("runbot_slack_api_calls_total", `method="chat.postMessage",outcome="ok"`))
	require.Positive(t, total("runbot_slack_api_calls_total", `method="chat.update",outcome="ok"`))
	require.Equal(t, 1.0, total("runbot_remediations_total", `remediation="disable_overlap_and_restart",state="done"`), "one remediation, whichever replica applied it")
}

// scrape reads runbot's /metrics with Prometheus's own parser, as metric
// name → labels (as `k="v",…`, sorted) → value, for counters and gauges.
func scrape(t *testing.T, runbotURL string) map[string]map[string]float64 {
	t.Helper()
	resp, err := http.Get(runbotURL + "/metrics")
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	out := map[string]map[string]float64{}
	for name, f := range families {
		out[name] = map[string]float64{}
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			sort.Strings(labels)
			v := m.GetCounter().GetValue() + m.GetGauge().GetValue()
			out[name][strings.Join(labels, ",")] = v
		}
	}
	return out
}
