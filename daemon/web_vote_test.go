package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/daemon"
	"github.com/runbot/runbot/preflight"
	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/store"
)

// TestVoteOnTheReportPage: serve's report pages take a vote from a person
// signed in through the trusted proxy, whom operators: maps to an
// identity, through the dispatcher (the path of a Slack click, audited as
// from the web), and send them back to the page, which says how many
// approvals the plan still waits for.
func TestVoteOnTheReportPage(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	dir := t.TempDir()
	db := filepath.Join(dir, "runbot.db")
	st, err := store.Open(t.Context(), db)
	require.NoError(t, err)
	run, err := st.CreateRun(t.Context(), store.Run{Runbook: "sglang-pd-wedge", Trigger: store.TriggerCLI, RequestedBy: "U0REQ"})
	require.NoError(t, err)
	body := remediation.PlanBody{Runbook: "sglang-pd-wedge", Remediation: "restart-decode", Diagnosis: "pd_transfer_wedge", Deployment: "sim", Verify: []string{"decode_progress"}}
	raw, err := json.Marshal(body)
	require.NoError(t, err)
	plan, _, err := st.CreatePlan(t.Context(), store.Plan{RunID: run.ID, Remediation: body.Remediation, Diagnosis: body.Diagnosis, Deployment: body.Deployment,
		Hash: body.Hash(), Body: raw, RequestedBy: "U0REQ", Policy: store.Policy{Approvers: []string{"U0ALICE", "U0BOB"}, MinApprovals: 2, TwoPerson: true}})
	require.NoError(t, err)
	require.NoError(t, st.Close())

	cfgPath := filepath.Join(dir, "runbot.yaml")
	require.NoError(t, os.WriteFile(cfgPath, fmt.Appendf(nil, `listen: %s
store: %s
shutdown_grace: 5s
web:
  url: http://%s/
  trust_header: X-Forwarded-User
  trusted_proxies: [127.0.0.1]
operators:
  alice: U0ALICE
`, addr, db, addr), 0o600))
	cfgPlan, problems, err := preflight.Load(cfgPath, nil, preflight.Overrides{})
	require.NoError(t, err)
	require.NoError(t, problems.Err())
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	var n notes
	done := make(chan error, 1)
	go func() { done <- daemon.Run(ctx, cfgPlan, n.notify) }()
	require.Eventually(t, func() bool {
		for _, s := range n.all() {
			if strings.HasPrefix(s, "READY=1") {
				return true
			}
		}
		return false
	}, 30*time.Second, 20*time.Millisecond, "no READY=1")

	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(req *http.Request) (*http.Response, string) {
		req.Header.Set("X-Forwarded-User", "alice")
		resp, err := client.Do(req)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }() // read below
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp, string(b)
	}
	page := "http://" + addr + "/runs/" + run.ID
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, page, nil)
	require.NoError(t, err)
	resp, html := do(req)
	require.Equal(t, http.StatusOK, resp.StatusCode, html)
	token := regexp.MustCompile(`name="token" value="([^"]+)"`).FindStringSubmatch(html)
	require.NotNil(t, token, "the page shows alice a vote form")

	form := url.Values{"plan": {plan.ID}, "hash": {plan.Hash}, "token": {token[1]}, "decision": {"approve"}}
	req, err = http.NewRequestWithContext(t.Context(), http.MethodPost, page+"/vote", strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "http://"+addr)
	resp, _ = do(req)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	back, err := req.URL.Parse(resp.Header.Get("Location"))
	require.NoError(t, err)
	req, err = http.NewRequestWithContext(t.Context(), http.MethodGet, back.String(), nil)
	require.NoError(t, err)
	resp, html = do(req)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, html, "1 of 2 approvals; it waits for 1 more")

	stop()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	st, err = store.Open(t.Context(), db)
	require.NoError(t, err)
	defer func() { require.NoError(t, st.Close()) }()
	approvals, err := st.Approvals(t.Context(), plan.ID)
	require.NoError(t, err)
	require.Len(t, approvals, 1)
	require.Equal(t, "U0ALICE", approvals[0].User)
	events, err := st.Audit(t.Context(), store.AuditFilter{PlanID: plan.ID, Kind: remediation.AuditVoteSource})
	require.NoError(t, err)
	require.Len(t, events, 1)
	require.Contains(t, string(events[0].Detail), `"channel":"web","login":"alice"`)
}
