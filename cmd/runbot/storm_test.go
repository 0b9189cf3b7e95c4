package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/slackchat/slackrec"
	"github.com/runbot/runbot/store"
)

const stormToken = "storm-alert-token"

// stormAlerts sends one Alertmanager notification of n alerts of one group.
func (r *restartRig) stormAlerts(group string, n int) {
	r.t.Helper()
	type alert struct {
		Status      string            `json:"status"`
		Labels      map[string]string `json:"labels"`
		StartsAt    string            `json:"startsAt"`
		Fingerprint string            `json:"fingerprint"`
	}
	var alerts []alert
	for i := range n {
		alerts = append(alerts, alert{Status: "firing", StartsAt: time.Now().UTC().Format(time.RFC3339),
			Labels:      map[string]string{"alertname": "StormProbe", "group": group, "instance": fmt.Sprintf("%s-%02d", group, i)},
			Fingerprint: fmt.Sprintf("%s-%02d", group, i)})
	}
	body, err := json.Marshal(map[string]any{"version": "4", "status": "firing", "receiver": "runbot",
		"groupKey": `{}:{group="` + group + `"}`, "alerts": alerts})
	require.NoError(r.t, err)
	req, err := http.NewRequest(http.MethodPost, fmt.Sprintf("http://127.0.0.1:%d/alerts/alertmanager", r.port), bytes.NewReader(body))
	require.NoError(r.t, err)
	req.Header.Set("Authorization", "Bearer "+stormToken)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(r.t, err)
	_ = resp.Body.Close() // the status is what matters
	require.Equal(r.t, http.StatusOK, resp.StatusCode)
}

// TestStormRestartLosesNoMessageAndRunsNothingTwice sends a storm of
// alerts (three groups of ten, five alone) to runbot serve while Slack
// answers every post with a 503, kills runbot as a crash does in the
// middle of it, and restarts it with Slack back. Every alert runs to a
// verdict exactly once, every message is posted exactly once and shows
// its verdicts, and the outbox is empty.
func TestStormRestartLosesNoMessageAndRunsNothingTwice(t *testing.T) {
	r := newRestartRig(t)
	cfg, err := os.ReadFile(r.cfg)
	require.NoError(t, err)
	cfg = fmt.Appendf(cfg, `alerts:
  bearer_token: {env: T_ALERT}
  generic:
    alertname: rule
    labels: {host: node}
  routes:
    - match: {alertname: StormProbe}
      runbook: sleep
      params: {secs: "2"}
`)
	require.NoError(t, os.WriteFile(r.cfg, cfg, 0o600))
	t.Setenv("T_ALERT", stormToken)
	for range 12 {
		r.rec.FailNext("chat.postMessage", slackrec.Failure{Status: http.StatusServiceUnavailable})
	}

	r.start()
	for _, g := range []string{"a", "b", "c"} {
		r.stormAlerts(g, 10)
	}
	for i := range 5 {
		r.stormAlerts(fmt.Sprintf("alone%d", i), 1)
	}
	// The generic webhook the config enables takes alerts too (this one
	// matches no route: recorded, not run).
	req, err := http.NewRequest(http.MethodPost, fmt.Sprintf("http://127.0.0.1:%d/alerts/generic", r.port),
		strings.NewReader(`{"rule": "DiskFull", "node": "gpu-1"}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+stormToken)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	ack, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close() // read in full
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(ack))
	require.Contains(t, string(ack), `"unrouted":1`)
	r.until("some runs finished while Slack fails", func() bool {
		n := 0
		for _, run := range r.allRuns() {
			if run.Status.Final() {
				n++
			}
		}
		return n >= 4
	})
	for _, c := range r.rec.Calls("chat.postMessage") {
		require.NotEqual(t, http.StatusOK, c.Status, "Slack took nothing before the crash")
	}
	r.kill()

	r.start()
	defer r.stop()
	// An operator's habitual SIGHUP does not kill it (r.stop requires a
	// clean exit at the end): it reloads the unchanged config in the
	// middle of the recovery.
	require.NoError(t, r.cmd.Process.Signal(syscall.SIGHUP))
	r.until("SIGHUP is answered in the log", func() bool {
		return strings.Contains(r.logs.String(), "config reloaded")
	})
	st := r.open()
	// A group's summary is brought up to date after its last run ends:
	// the wait is for Slack to show every verdict, which the deadline
	// bounds (a summary left behind for good fails the test there).
	r.until("every alert ran, every message was delivered and every summary shows every verdict", func() bool {
		finished := 0
		for _, run := range r.allRuns() {
			if run.Status == store.RunFinished {
				finished++
			}
		}
		b, err := st.ChatBacklog(t.Context())
		require.NoError(t, err)
		done := 0
		for _, text := range r.newestTexts() {
			if strings.Contains(text, "alerts firing") && strings.Contains(text, "10: 10 diagnosed, 0 queued or running") {
				done++
			}
		}
		return finished == 35 && b.Due == 0 && done == 3
	})

	// Nothing ran twice: one finished run per alert's work, and a run cut
	// short by the crash is the only reason for a second.
	byWork := map[string]int{}
	for _, run := range r.allRuns() {
		if run.Status == store.RunFinished {
			byWork[run.WorkID]++
		}
	}
	require.Len(t, byWork, 35)
	for w, n := range byWork {
		require.Equal(t, 1, n, "work %s finished %d runs", w, n)
	}

	// Every message posted once: three group summaries and five alerts'
	// own messages at the top, the lone alerts' runs in their threads.
	var top, replies []slackrec.Call
	for _, c := range r.rec.Calls("chat.postMessage") {
		if c.Status != http.StatusOK {
			continue
		}
		if c.Form.Get("thread_ts") == "" {
			top = append(top, c)
		} else {
			replies = append(replies, c)
		}
	}
	require.Len(t, top, 8, "one message per group and per lone alert, none twice")
	require.Len(t, replies, 5, "the lone alerts' runs, once each")

	// Each group's summary, as Slack shows it last, has every alert's
	// verdict.
	summaries := 0
	for ts, text := range r.newestTexts() {
		if !strings.Contains(text, "alerts firing") {
			continue
		}
		summaries++
		require.Contains(t, text, "10: 10 diagnosed, 0 queued or running", "summary %s: %s", ts, text)
		require.Equal(t, 10, strings.Count(text, "Slept as asked."), "summary %s: %s", ts, text)
	}
	require.Equal(t, 3, summaries)
}

// newestTexts is the text of every message posted, as Slack shows it
// last (its newest update), by ts.
func (r *restartRig) newestTexts() map[string]string {
	newest := map[string]string{}
	for _, c := range r.rec.Calls("chat.postMessage") {
		if c.Status == http.StatusOK {
			newest[c.TS] = c.Text()
		}
	}
	for _, c := range r.rec.Calls("chat.update") {
		if c.Status == http.StatusOK {
			newest[c.Form.Get("ts")] = c.Text()
		}
	}
	return newest
}

// open opens the rig's store for reading, closed at the end of the test.
func (r *restartRig) open() store.Store {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := store.Open(ctx, r.db)
	require.NoError(r.t, err)
	r.t.Cleanup(func() { _ = st.Close() })
	return st
}

// allRuns reads every run, oldest first.
func (r *restartRig) allRuns() []store.Run {
	var out []store.Run
	for _, runs := range r.runs() {
		out = append(out, runs...)
	}
	return out
}
