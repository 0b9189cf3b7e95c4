package web_test

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/store"
	"github.com/runbot/runbot/web"
)

// The site's answers that need no browser: status codes, the headers that
// keep a signed link from leaking, and the messages of refusals.
func TestSiteAnswers(t *testing.T) { //nolint:tparallel // the cases share one store and site
	t.Parallel()
	st, err := store.Open(t.Context(), filepath.Join(t.TempDir(), "runbot.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	run, err := st.CreateRun(t.Context(), store.Run{Runbook: "leaky-config", Trigger: store.TriggerCLI, RequestedBy: "bob", Params: map[string]string{"note": "password=hunter2"}})
	require.NoError(t, err)
	signer, err := web.NewSigner(linkKey, time.Hour, nil)
	require.NoError(t, err)
	site, err := web.New(web.Config{Signer: signer, Logger: quiet(),
		Proxy: &web.ProxyTrust{Header: "X-Forwarded-User", From: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}}}, st)
	require.NoError(t, err)
	require.Empty(t, site.RunURL(run.ID), "no public URL, no links")

	cases := []struct {
		name, path, user string
		code             int
		says             string
	}{
		{"list for a proxy user", "/runs/", "alice", 200, run.ID},
		{"list without one", "/runs/", "", 403, "Sign-in needed"},
		{"the list's bare path", "/runs", "alice", 301, ""},
		{"a running run without a report", "/runs/" + run.ID, "alice", 200, "The run recorded no report"},
		{"a run by prefix for a proxy user", "/runs/" + run.ID[:10], "alice", 200, run.ID},
		{"an unknown run", "/runs/r-nope", "alice", 404, "No such run"},
		{"a run by its signed link", "/runs/" + run.ID + "?l=" + signer.Sign(run.ID), "", 200, run.ID},
		{"a prefix with the run's link", "/runs/" + run.ID[:10] + "?l=" + signer.Sign(run.ID), "", 403, "This link is not valid"},
		{"the picture of a run without a report", "/runs/" + run.ID + "/timeline.png", "alice", 404, ""},
		{"a bad trigger filter", "/runs/?trigger=pager", "alice", 400, "trigger &#34;pager&#34;"},
		{"a bad time filter", "/runs/?since=yesterday", "alice", 400, "since &#34;yesterday&#34;"},
		{"the draft", "/runs/" + run.ID + "/postmortem.md", "alice", 200, "# Postmortem draft"},
		{"a malformed run id, signed in", "/runs/r-%25%27%22", "alice", 404, "No such run"},
		{"a huge run id, not signed in", "/runs/" + strings.Repeat("a", 100_000), "", 404, "(100000 bytes)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, tc.path, nil)
			if tc.user != "" {
				req.Header.Set("X-Forwarded-User", tc.user)
			}
			w := httptest.NewRecorder()
			site.ServeHTTP(w, req)
			require.Equal(t, tc.code, w.Code, w.Body.String())
			require.Contains(t, w.Body.String(), tc.says)
			require.NotContains(t, w.Body.String(), "hunter2")
			require.Less(t, w.Body.Len(), 20_000, "what the client sent is not echoed at length")
			h := w.Header()
			require.Equal(t, "no-referrer", h.Get("Referrer-Policy"), "a signed link must not leak in a Referer")
			require.Equal(t, "private, no-store", h.Get("Cache-Control"))
			require.True(t, strings.HasPrefix(h.Get("Content-Security-Policy"), "default-src 'none'"))
		})
	}
}

// A site refuses to start without a way to grant access, or with a header
// trusted from nowhere.
func TestNewSiteRefusesOpenSetups(t *testing.T) {
	t.Parallel()
	st, err := store.Open(t.Context(), filepath.Join(t.TempDir(), "runbot.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	_, err = web.New(web.Config{}, st)
	require.ErrorContains(t, err, "signed links")
	_, err = web.New(web.Config{Proxy: &web.ProxyTrust{Header: "X-User"}}, st)
	require.ErrorContains(t, err, "needs the proxies")
	_, err = web.New(web.Config{Proxy: &web.ProxyTrust{Header: "X-User", From: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}}, nil)
	require.ErrorContains(t, err, "store")
}
