//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/browsertest"
	"github.com/runbot/runbot/internal/proxytest"
	"github.com/runbot/runbot/test/e2e/testhost"
)

// withoutSlackGuide does what docs/deploy.md's "Running without Slack"
// says, on the service the guide installed: the slack: block deleted, the
// web: block given a link secret, an operator with sudo. Then the
// deployment wedges, a real Alertmanager sends the alert, serve proposes
// the fix, the operator approves it with `sudo runbot approve`, serve
// applies and verifies it, the audit says the vote came from the CLI, and
// `runbot link` opens the run's page. It returns the alert run's ID.
func withoutSlackGuide(t *testing.T, c *testhost.Cluster, h *testhost.Host, work, amCfg string) string {
	t.Helper()
	const cfgPath = "/etc/runbot/runbot.yaml"
	runbotURL := "http://" + net.JoinHostPort(h.Address, "8080")

	c.Step(t, h, "running without Slack: delete the slack: block, give web: a link secret, add an operator")
	cfg := h.Run(t, "cat "+cfgPath)
	start := strings.Index(cfg, "\nslack:\n")
	require.GreaterOrEqual(t, start, 0, "deploy/runbot.yaml has no slack: block: update TestDeployGuide")
	end := strings.Index(cfg[start+1:], "\n\n")
	require.Positive(t, end)
	cfg = cfg[:start+1] + cfg[start+1+end+2:]
	require.NotContains(t, cfg, "\nslack:")
	const webOff = "# web:\n#   url: https://runbot.example.com/\n#   link_secret: {file: /etc/runbot/web-link-secret}\n"
	require.Contains(t, cfg, webOff, "deploy/runbot.yaml's web: example changed: update TestDeployGuide")
	// The page votes behind an authenticating proxy on the runner (the
	// bridge's address, 10.200.0.1, as the host sees it): the guide's
	// "Voting on the report pages".
	cfg = strings.Replace(cfg, webOff, "web:\n  url: "+runbotURL+"/\n  link_secret: {file: /etc/runbot/web-link-secret}\n"+
		"  trust_header: "+proxytest.Header+"\n  trusted_proxies: [10.200.0.1]\n", 1)
	putFile(t, h, cfgPath, cfg)
	// The secret as the config's comment says to make it; readable by
	// root (runbot link through sudo) and the runbot group (serve).
	h.Run(t, "head -c 32 /dev/urandom | base64 > /etc/runbot/web-link-secret && chown root:runbot /etc/runbot/web-link-secret && chmod 0640 /etc/runbot/web-link-secret")
	// alice is an administrator of the host: she has sudo, and the
	// config's operators: maps her login to U01ALICE.
	require.Contains(t, cfg, "operators:\n  alice: U01ALICE\n")
	h.Run(t, "useradd --create-home alice && echo 'alice ALL=(ALL) NOPASSWD: ALL' > /etc/sudoers.d/alice && chmod 0440 /etc/sudoers.d/alice")
	out := h.Run(t, "runuser -u runbot -- runbot serve --check --config "+cfgPath+" 2>&1")
	t.Logf("serve --check without Slack:\n%s", out)
	h.Run(t, "systemctl restart runbot")
	testhost.Eventually(t, time.Minute, "runbot is ready without Slack", func() (bool, string) {
		resp, err := http.Get(runbotURL + "/readyz")
		if err != nil {
			return false, err.Error()
		}
		_ = resp.Body.Close() // only the status matters
		return resp.StatusCode == http.StatusOK, resp.Status
	})
	require.NotContains(t, httpGet(t, runbotURL+"/metrics"), `runbot_dependency_up{dependency="slack"}`)

	c.Step(t, h, "the deployment wedges under load")
	startLoad(t, h)
	require.Contains(t, h.Fault(t, "decode", `{"fault":"pd-wedge"}`), `"wedged":true`)

	c.Step(t, h, "a new Alertmanager sends the alert; serve proposes the fix and posts nowhere")
	amWork := filepath.Join(work, "am-noslack")
	require.NoError(t, os.MkdirAll(amWork, 0o700))
	am := startAlertmanagerWith(t, amWork, amCfg)
	// A label the first alert did not have: a new alert for runbot's dedup
	// window, not the one it ran for with Slack.
	postAlertLabels(t, am, map[string]string{"alertname": "SGLangRequestsHanging", "deployment": h.Deployment,
		"severity": "critical", "phase": "without-slack"})
	var plan guidePlan
	testhost.Eventually(t, 5*time.Minute, "runbot plans lists the alert run's plan", func() (bool, string) {
		js := h.Run(t, "runbot plans --format json --config "+cfgPath)
		var plans []guidePlan
		if err := json.Unmarshal([]byte(js), &plans); err != nil {
			return false, js
		}
		for _, p := range plans {
			if p.Runbook == "sglang-pd-wedge" && p.Diagnosis == "pd_transfer_wedge" {
				plan = p
				return true, js
			}
		}
		return false, js
	})
	require.Equal(t, "disable_overlap_and_restart", plan.Remediation)
	require.Equal(t, "proposed", plan.State)

	c.Step(t, h, "an OS user not in operators: cannot vote, and changes nothing")
	h.Run(t, "useradd --create-home mallory && echo 'mallory ALL=(ALL) NOPASSWD: ALL' > /etc/sudoers.d/mallory && chmod 0440 /etc/sudoers.d/mallory")
	res, err := h.Exec(t.Context(), "runuser -u mallory -- sudo runbot approve "+plan.PlanID+" --hash "+plan.Hash+" --config "+cfgPath)
	require.NoError(t, err)
	require.NotEqual(t, 0, res.ExitCode, "mallory's vote: %s%s", res.Stdout, res.Stderr)
	require.Contains(t, res.Stderr, "mallory", "the refusal names the OS user")
	require.Contains(t, h.Run(t, "runbot plans "+plan.PlanID+" --format json --config "+cfgPath), `"approvals": 0`)

	c.Step(t, h, "alice approves with sudo runbot approve; serve applies and verifies the fix")
	out = h.Run(t, "runuser -u alice -- sudo runbot approve "+plan.PlanID+" --hash "+plan.Hash+" --config "+cfgPath)
	t.Logf("runbot approve:\n%s", out)
	require.Contains(t, out, "as U01ALICE (OS user alice")
	require.Contains(t, out, "is approved (1 of 1)")
	testhost.Eventually(t, 5*time.Minute, "the plan ends done", func() (bool, string) {
		js := h.Run(t, "runbot plans "+plan.PlanID+" --format json --config "+cfgPath)
		return strings.Contains(js, `"state": "done"`), js
	})
	require.Contains(t, h.Run(t, "journalctl -u runbot --no-pager -o cat"), "applying a plan approved from the cli")
	for _, script := range []string{testhost.PrefillScript, testhost.DecodeScript} {
		require.Contains(t, h.Run(t, "cat "+script), "--disable-overlap-schedule")
	}
	show := h.Run(t, "runbot show "+plan.RunID+" --store /var/lib/runbot/runbot.db")
	require.Contains(t, show, "plan.vote_source")
	require.Contains(t, show, "alice")

	c.Step(t, h, "runbot link opens the run's page without Slack")
	link := strings.TrimSpace(h.Run(t, "runuser -u alice -- sudo runbot link "+plan.RunID+" --config "+cfgPath))
	require.True(t, strings.HasPrefix(link, runbotURL+"/runs/"), link)
	page := httpGet(t, link)
	require.Contains(t, page, "pd_transfer_wedge")

	webVote(t, c, h, am, runbotURL, plan)
	return plan.RunID
}

// webVote is the second way to approve without Slack: alice, signed in by
// an authenticating proxy, approves the next fix from the run's page in
// Chromium; serve applies and verifies it, and the audit says the vote
// came from the web.
func webVote(t *testing.T, c *testhost.Cluster, h *testhost.Host, am, runbotURL string, before guidePlan) {
	t.Helper()
	const cfgPath = "/etc/runbot/runbot.yaml"
	c.Step(t, h, "the overlap schedule is turned back on and decode wedges again")
	for _, script := range []string{testhost.PrefillScript, testhost.DecodeScript} {
		h.Run(t, "sed -i 's/ --disable-overlap-schedule//' "+script)
	}
	h.Run(t, "systemctl restart "+testhost.UnitPrefill+" && systemctl restart "+testhost.UnitDecode)
	testhost.Eventually(t, time.Minute, "decode runs batches again", func() (bool, string) {
		return strings.Contains(h.Journal(t, testhost.UnitDecode, 50), "Decode batch"), ""
	})
	require.Contains(t, h.Fault(t, "decode", `{"fault":"pd-wedge"}`), `"wedged":true`)
	postAlertLabels(t, am, map[string]string{"alertname": "SGLangRequestsHanging", "deployment": h.Deployment,
		"severity": "critical", "phase": "web-vote"})
	var plan guidePlan
	testhost.Eventually(t, 5*time.Minute, "runbot plans lists the new run's plan", func() (bool, string) {
		js := h.Run(t, "runbot plans --format json --config "+cfgPath)
		var plans []guidePlan
		if err := json.Unmarshal([]byte(js), &plans); err != nil {
			return false, js
		}
		for _, p := range plans {
			if p.Runbook == "sglang-pd-wedge" && p.PlanID != before.PlanID && p.State == "proposed" {
				plan = p
				return true, js
			}
		}
		return false, js
	})

	c.Step(t, h, "alice, signed in by the proxy, approves it from the run's page in Chromium")
	proxy := proxytest.Signing(t, runbotURL)
	ctx := browsertest.Start(t)
	resp, err := chromedp.RunResponse(ctx, chromedp.Navigate(proxy.URL+"/sign-in?as=alice&to="+url.QueryEscape("/runs/"+plan.RunID)))
	require.NoError(t, err)
	require.Equal(t, int64(http.StatusOK), resp.Status)
	buttons := `document.querySelectorAll("form.vote button[name=decision]").length`
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](buttons))
	require.NoError(t, err)
	require.Equal(t, 2, n, "Approve and Deny for alice")
	resp, err = chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(`form.vote button[value=approve]`)))
	require.NoError(t, err, "click Approve")
	require.Equal(t, int64(http.StatusOK), resp.Status)
	body, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
	require.NoError(t, err)
	require.Contains(t, body, "Your approval settled plan")

	c.Step(t, h, "serve applies and verifies the fix the page approved")
	testhost.Eventually(t, 5*time.Minute, "the plan ends done", func() (bool, string) {
		js := h.Run(t, "runbot plans "+plan.PlanID+" --format json --config "+cfgPath)
		return strings.Contains(js, `"state": "done"`), js
	})
	for _, script := range []string{testhost.PrefillScript, testhost.DecodeScript} {
		require.Contains(t, h.Run(t, "cat "+script), "--disable-overlap-schedule")
	}
	show := h.Run(t, "runbot show "+plan.RunID+" --store /var/lib/runbot/runbot.db")
	require.Contains(t, show, "plan.vote_source")
	require.Contains(t, show, "channel=web")
	require.Contains(t, show, "login=alice")
}

// guidePlan is what the test reads of `runbot plans --format json`.
type guidePlan struct {
	PlanID      string `json:"plan_id"`
	RunID       string `json:"run_id"`
	Runbook     string `json:"runbook"`
	Remediation string `json:"remediation"`
	Diagnosis   string `json:"diagnosis"`
	State       string `json:"state"`
	Hash        string `json:"hash"`
}

// postAlertLabels posts one firing alert with these labels to Alertmanager.
func postAlertLabels(t *testing.T, am string, labels map[string]string) {
	t.Helper()
	body, err := json.Marshal([]any{map[string]any{
		"labels":      labels,
		"annotations": map[string]string{"summary": "chat completions time out while /health is 200"},
		"startsAt":    time.Now().Add(-time.Minute).UTC().Format(time.RFC3339),
	}})
	require.NoError(t, err)
	resp, err := http.Post(am+"/api/v2/alerts", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	_ = resp.Body.Close() // only the status matters
	require.Equal(t, http.StatusOK, resp.StatusCode)
}
