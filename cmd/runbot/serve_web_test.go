package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// fullReport finds the Full report link in a Slack message's text.
var fullReport = regexp.MustCompile(`<(http://[^|>]+)\|Full report>`)

// TestServeLinksRunMessagesToTheirReport runs the real runbot serve with
// web: configured: the run's Slack message links to its report page, the
// link opens it without any sign-in, a changed link is refused, and the
// run list opens only for a user the trusted proxy names.
func TestServeLinksRunMessagesToTheirReport(t *testing.T) {
	r := newRestartRig(t)
	secret := t.TempDir() + "/link-secret"
	require.NoError(t, os.WriteFile(secret, []byte("serve-web-test-link-secret\n"), 0o600))
	cfg, err := os.ReadFile(r.cfg)
	require.NoError(t, err)
	cfg = fmt.Appendf(cfg, `web:
  url: http://127.0.0.1:%d/
  link_secret: {file: %s}
  link_ttl: 1d
  trust_header: X-Forwarded-User
  trusted_proxies: [127.0.0.1]
`, r.port, secret)
	require.NoError(t, os.WriteFile(r.cfg, cfg, 0o600))
	r.start()
	defer r.stop()

	r.command("sleep 0")
	var link, runID string
	r.until("the run message links to its report", func() bool {
		for _, run := range r.runs()["0"] {
			if run.Message == nil || !run.Status.Final() {
				continue
			}
			for _, c := range r.rec.Calls("chat.update") {
				if c.Form.Get("ts") == run.Message.ID {
					if m := fullReport.FindStringSubmatch(c.Text()); m != nil && strings.Contains(c.Text(), "Slept as asked") {
						link, runID = m[1], run.ID
					}
				}
			}
		}
		return link != ""
	})
	require.Contains(t, link, fmt.Sprintf("http://127.0.0.1:%d/runs/%s?l=", r.port, runID))

	get := func(u string, header ...string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, u, nil)
		require.NoError(t, err)
		if len(header) == 2 {
			req.Header.Set(header[0], header[1])
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }() // read in full below
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body)
	}
	code, page := get(link)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, page, runID)
	require.Contains(t, page, "Slept as asked.")

	code, page = get(strings.Replace(link, "?l=", "?l=1", 1))
	require.Equal(t, http.StatusForbidden, code)
	require.Contains(t, page, "This link is not valid")

	code, _ = get(fmt.Sprintf("http://127.0.0.1:%d/runs/", r.port))
	require.Equal(t, http.StatusForbidden, code, "the run list needs the proxy's user")
	code, page = get(fmt.Sprintf("http://127.0.0.1:%d/runs/", r.port), "X-Forwarded-User", "alice")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, page, runID)
	require.Contains(t, page, "signed in as alice")
}
