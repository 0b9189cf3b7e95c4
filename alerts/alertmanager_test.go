package alerts

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"go/build"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/chat/chattest"
	"github.com/runbot/runbot/internal/syncbuf"
	"github.com/runbot/runbot/store"
)

const alertmanagerInstall = "go install github.com/prometheus/alertmanager/cmd/alertmanager@v0.31.1"

// alertmanagerBinary finds a real Alertmanager: on PATH, or where go
// install puts it.
func alertmanagerBinary(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("alertmanager"); err == nil {
		return p
	}
	for _, dir := range filepath.SplitList(build.Default.GOPATH) {
		p := filepath.Join(dir, "bin", "alertmanager")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Fatalf("the alertmanager binary is missing (not on PATH nor in $GOPATH/bin): install it with `%s` (scripts/test-deps.sh does it for make test)", alertmanagerInstall)
	return ""
}

// realAlertmanager is an Alertmanager process on a loopback port, with
// clustering off, whose only receiver is runbot's webhook.
type realAlertmanager struct {
	url  string
	logs *syncbuf.Buffer
}

func startAlertmanager(t *testing.T, webhook string) *realAlertmanager {
	t.Helper()
	bin := alertmanagerBinary(t)
	dir := t.TempDir()
	// Short intervals, so that the test sees repeats within seconds.
	config := fmt.Sprintf(`
global:
  resolve_timeout: 5m
route:
  receiver: runbot
  group_by: ['alertname', 'service']
  group_wait: 200ms
  group_interval: 1s
  repeat_interval: 2s
receivers:
  - name: runbot
    webhook_configs:
      - url: %s/alerts/alertmanager
        send_resolved: true
        http_config:
          authorization:
            type: Bearer
            credentials: %s
`, webhook, alertToken)
	cfg := filepath.Join(dir, "alertmanager.yml")
	require.NoError(t, os.WriteFile(cfg, []byte(config), 0o600))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	am := &realAlertmanager{url: "http://" + addr, logs: &syncbuf.Buffer{}}
	cmd := exec.Command(bin, "--config.file="+cfg, "--storage.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--web.external-url="+am.url, "--cluster.listen-address=", "--log.level=debug")
	cmd.Stdout, cmd.Stderr = am.logs, am.logs
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("alertmanager log:\n%s", am.logs.String())
		}
	})
	// Wait for it to answer; it is a separate process starting up.
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(am.url + "/-/ready")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return am
			}
		}
		require.True(t, time.Now().Before(deadline), "alertmanager did not become ready: %v\n%s", err, am.logs.String())
		time.Sleep(50 * time.Millisecond)
	}
}

// post sends alerts through Alertmanager's v2 API, as Prometheus does.
func (am *realAlertmanager) post(t *testing.T, alerts ...map[string]any) {
	t.Helper()
	body, err := json.Marshal(alerts)
	require.NoError(t, err)
	resp, err := http.Post(am.url+"/api/v2/alerts", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// A real Alertmanager delivers an alert to runbot again and again (first
// notification, then every repeat_interval): runbot runs the runbook once,
// counts the repeats on the alert's message, and posts the resolution in
// its thread when Alertmanager says it resolved.
func TestRealAlertmanagerRunsOnceAndResolves(t *testing.T) {
	t.Parallel()
	h := newAlertHarness(t)
	am := startAlertmanager(t, h.srv.URL)
	labels := map[string]string{"alertname": "HighErrorRate", "service": "api", "severity": "critical", "instance": "api-1:8080"}
	started := time.Now().UTC().Truncate(time.Second)
	am.post(t, map[string]any{
		"labels": labels, "annotations": map[string]string{"summary": "API 5xx ratio above 5%"},
		"startsAt": started.Format(time.RFC3339), "generatorURL": "http://prometheus.example:9090/graph",
	})

	// Three deliveries: the first, and two repeats.
	h.wait(func(posts []chattest.Post) bool {
		for _, p := range posts {
			for _, u := range p.Updates {
				if strings.Contains(u.Text(), "Fingerprint") && strings.Contains(u.Text(), "Seen 3 times") {
					return true
				}
			}
		}
		return false
	})
	states, err := h.store.RecentAlerts(t.Context(), time.Time{})
	require.NoError(t, err)
	require.Len(t, states, 1)
	fp := states[0].Fingerprint
	require.Len(t, fp, 16, "Alertmanager's fingerprint")

	am.post(t, map[string]any{
		"labels": labels, "annotations": map[string]string{"summary": "API 5xx ratio above 5%"},
		"startsAt": started.Format(time.RFC3339), "endsAt": time.Now().UTC().Add(-time.Second).Format(time.RFC3339),
	})
	h.wait(func(posts []chattest.Post) bool {
		for _, p := range posts {
			if p.Thread != "" && strings.Contains(p.Message.Text(), "HighErrorRate resolved") {
				return true
			}
		}
		return false
	})
	h.settle()

	runs := h.runs()
	require.Len(t, runs, 1, "Alertmanager's repeats start no second run")
	require.Equal(t, store.RunFinished, runs[0].Status)
	require.Equal(t, map[string]string{"host": "here", "service": "api", "dir": h.dir, "sleep": "0"}, runs[0].Params)
	st, err := h.store.GetAlert(t.Context(), fp)
	require.NoError(t, err)
	require.Equal(t, store.AlertResolved, st.Status)
	require.Equal(t, runs[0].ID, st.RunID)
	deliveries, err := h.store.AlertDeliveries(t.Context(), fp)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(deliveries), 4)
	for _, d := range deliveries {
		var a Alert
		require.NoError(t, json.Unmarshal(d.Payload, &a))
		require.Equal(t, "runbot", a.Receiver)
		require.Equal(t, am.url, a.ExternalURL)
	}
	require.Contains(t, h.newestAlert("HighErrorRate"), "HighErrorRate resolved")
	require.Equal(t, 0.0, h.metric("runbot_alert_notifications_rejected_total"))
	require.NotContains(t, am.logs.String(), "Notify for alerts failed", "every delivery was accepted")

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	require.NoError(t, h.alerts.settled(ctx))
}
