package main

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// linkSecret signs the links of the link test's serve.
const linkSecret = "link-test-secret-of-32-bytes-ok!"

// runbot link prints the signed link to a run's page that serve's Slack
// messages would carry, made from serve's config; serve's report page
// opens with it (and not without it). Without signed links configured, or
// a link secret that does not load here, it is refused with what to fix.
func TestLinkOpensTheReportPage(t *testing.T) {
	runbot, _ := buildBinaries(t)
	s := newApproveSite(t, runbot)
	port := freePort(t)
	web := fmt.Sprintf("listen: 127.0.0.1:%d\nweb:\n  url: http://127.0.0.1:%d/\n  link_secret: {env: T_LINK}\n", port, port)
	cfg := s.config("runbot.yaml", web)
	s.serve(cfg, port, "T_LINK="+linkSecret)
	plan := s.propose("cli-fix", "U0ALICE")

	get := func(url string) (int, string) {
		resp, err := http.Get(url)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }() // read to the end below
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body)
	}
	env := []string{"T_LINK=" + linkSecret}
	for _, run := range []string{plan.RunID, plan.RunID[:len(plan.RunID)-2]} {
		stdout, stderr, code := s.cli(env, "link", run, "--config", cfg)
		require.Equal(t, 0, code, stderr)
		link := strings.TrimSpace(stdout)
		require.Regexp(t, "^"+regexp.QuoteMeta(fmt.Sprintf("http://127.0.0.1:%d/runs/%s?l=", port, plan.RunID))+`[0-9]+\.[A-Za-z0-9_-]+$`, link)
		status, body := get(link)
		require.Equal(t, http.StatusOK, status, body)
		require.Contains(t, body, plan.RunID)
		require.Contains(t, body, "cli-fix")
	}
	status, _ := get(fmt.Sprintf("http://127.0.0.1:%d/runs/%s", port, plan.RunID))
	require.Equal(t, http.StatusForbidden, status, "the page needs the signed link")

	for _, tc := range []struct {
		name, config string
		env          []string
		want         string
	}{
		{"no web block", s.config("no-web.yaml", ""), env, "no-web.yaml: no web: block, so runbot serve has no report pages to link to"},
		{"no link secret", s.config("proxy-only.yaml", "web:\n  url: https://runbot.example.com/\n  trust_header: X-Forwarded-User\n  trusted_proxies: [10.0.0.1]\n"), env,
			"proxy-only.yaml:6:3: web: has no link_secret, so runbot serve signs no links"},
		{"secret not readable here", cfg, []string{"T_LINK="}, "runbot.yaml:8:16: web.link_secret (env T_LINK) does not load here, so no link can be signed"},
		{"unknown run", cfg, env, "get run r-20200101-000000-000000: not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := plan.RunID
			if tc.name == "unknown run" {
				run = "r-20200101-000000-000000"
			}
			stdout, stderr, code := s.cli(tc.env, "link", run, "--config", tc.config)
			require.Equal(t, 1, code, stdout)
			require.Empty(t, stdout)
			require.Contains(t, stderr, tc.want)
		})
	}
}
