package web_test

import (
	"context"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/browsertest"
	"github.com/runbot/runbot/internal/redact"
	"github.com/runbot/runbot/internal/secret"
	"github.com/runbot/runbot/store"
	"github.com/runbot/runbot/web"
)

// linkKey signs the test sites' links.
var linkKey = []byte("web-test-link-secret-0123456789")

// clock is a settable clock for link expiry.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

// testSite serves the fixture's store over a real HTTP server, trusting
// X-Forwarded-User from loopback (the test's browser stands in for the
// authenticating proxy when it sends the header).
type testSite struct {
	srv    *httptest.Server
	site   *web.Site
	signer *web.Signer
	clock  *clock
}

func newTestSite(t *testing.T, f *fixture) *testSite {
	t.Helper()
	st, err := store.Open(t.Context(), f.path)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	c := &clock{t: time.Now()}
	signer, err := web.NewSigner(linkKey, 7*24*time.Hour, c.now)
	require.NoError(t, err)
	red, err := redact.New([]string{extraRedact}, secret.New(string(linkKey)))
	require.NoError(t, err)
	ts := &testSite{signer: signer, clock: c}
	// The base URL is known once the server listens; the handler is set
	// right after.
	ts.srv = httptest.NewUnstartedServer(nil)
	ts.srv.Start()
	t.Cleanup(ts.srv.Close)
	base, err := url.Parse(ts.srv.URL + "/")
	require.NoError(t, err)
	ts.site, err = web.New(web.Config{
		BaseURL: base, Signer: signer, Redactor: red, Logger: quiet(), Now: c.now,
		Proxy: &web.ProxyTrust{Header: "X-Forwarded-User", From: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("::1/128")}},
	}, st)
	require.NoError(t, err)
	ts.srv.Config.Handler = ts.site
	return ts
}

// browser starts headless Chromium for one test.
func browser(t *testing.T) context.Context {
	t.Helper()
	return browsertest.Start(t)
}

// text is the text of the first element css selects.
func text(t *testing.T, ctx context.Context, css string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(css)))
	require.NoError(t, err, css)
	return s
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](t *testing.T, ctx context.Context, expr string, opts ...chromedp.EvaluateOption) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, opts...))
	require.NoError(t, err, expr)
	return v
}

// open navigates and returns the HTTP status of the page.
func open(t *testing.T, ctx context.Context, u string) int64 {
	t.Helper()
	resp, err := chromedp.RunResponse(ctx, chromedp.Navigate(u))
	require.NoError(t, err, u)
	return resp.Status
}

func signIn(t *testing.T, ctx context.Context, user string) {
	t.Helper()
	_, err := chromedp.Call(ctx, network.Enable, network.EnableParams{})
	require.NoError(t, err)
	_, err = chromedp.Call(ctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: network.Headers{"X-Forwarded-User": user}})
	require.NoError(t, err)
}

// rows returns the run ids the run list shows.
func rows(t *testing.T, ctx context.Context) []string {
	t.Helper()
	return eval[[]string](t, ctx, `Array.from(document.querySelectorAll("#runs tbody tr")).map(r => r.dataset.run)`)
}

// The run list filters by runbook, deployment, trigger, outcome and time,
// through its form, and a filter that matches nothing says so.
func TestBrowserRunListFilters(t *testing.T) {
	f := theFixture(t)
	ts := newTestSite(t, f)
	ctx := browser(t)
	signIn(t, ctx, "alice")
	require.EqualValues(t, 200, open(t, ctx, ts.srv.URL+"/runs/"))
	require.ElementsMatch(t, []string{f.wedge.ID, f.leaky.ID, f.other.ID}, rows(t, ctx))

	submit := func(sel, value string) {
		t.Helper()
		require.NoError(t, chromedp.Do(ctx,
			chromedp.Navigate(ts.srv.URL+"/runs/"),
			chromedp.WaitVisible(chromedp.ID("f-runbook")),
			chromedp.SetValue(chromedp.ID(sel), value),
		))
		// Submitting navigates; wait for the new page to be there.
		_, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(`form.filters button[type=submit]`)))
		require.NoError(t, err, "submit %s=%s", sel, value)
		// The form submits by GET, so the filter is in the address.
		loc, err := chromedp.Run(ctx, chromedp.Location())
		require.NoError(t, err)
		require.Contains(t, loc, "?", "the form navigated")
	}
	cases := []struct {
		field, value string
		want         []string
	}{
		{"f-trigger", "alert", []string{f.wedge.ID}},
		{"f-trigger", "schedule", []string{f.leaky.ID}},
		{"f-outcome", "critical", []string{f.wedge.ID}},
		{"f-runbook", "leaky-config", []string{f.leaky.ID, f.other.ID}},
		{"f-deployment", "edge-2", []string{f.other.ID}},
		{"f-deployment", "sim", []string{f.wedge.ID}},
		// The leaky runs start after the wedge's remediation, half a
		// minute or more after the wedge run.
		{"f-since", f.wedge.StartedAt.UTC().Truncate(time.Second).Add(2 * time.Second).Format("2006-01-02T15:04:05"), []string{f.leaky.ID, f.other.ID}},
		{"f-until", f.wedge.StartedAt.UTC().Truncate(time.Second).Add(2 * time.Second).Format("2006-01-02T15:04:05"), []string{f.wedge.ID}},
	}
	for _, tc := range cases {
		submit(tc.field, tc.value)
		require.ElementsMatch(t, tc.want, rows(t, ctx), "%s=%s", tc.field, tc.value)
	}
	submit("f-until", "2001-01-01T00:00")
	require.Empty(t, rows(t, ctx))
	require.Equal(t, "No run matches.", text(t, ctx, "#no-runs"))

	// A run's link in the list opens its page.
	require.EqualValues(t, 200, open(t, ctx, ts.srv.URL+"/runs/?trigger=alert"))
	resp, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(`#runs tbody a`)))
	require.NoError(t, err)
	require.EqualValues(t, 200, resp.Status)
	require.Equal(t, f.wedge.ID, text(t, ctx, "#run-id"))
}

// A wedge run's page, opened by its signed link alone, shows the
// diagnosis, a timeline picture that loads, the plan's diff, the approval
// and the audit trail with times and people.
func TestBrowserWedgePage(t *testing.T) {
	f := theFixture(t)
	ts := newTestSite(t, f)
	ctx := browser(t)
	link := ts.site.RunURL(f.wedge.ID)
	require.Contains(t, link, "/runs/"+f.wedge.ID+"?l=")
	require.EqualValues(t, 200, open(t, ctx, link))

	h1 := text(t, ctx, "h1")
	diagnosis := text(t, ctx, "#diagnosis ~ .diagnosis")
	diff := text(t, ctx, "pre.diff")
	audit := text(t, ctx, "#audit-trail")
	approvals := text(t, ctx, "table.approvals")
	outcome := text(t, ctx, `[id^="outcome-"]`)
	// The picture is fetched through the page's own link parameter.
	_, err := chromedp.Run(ctx, chromedp.Poll[bool](`(() => { const i = document.getElementById("timeline-img"); return i && i.complete && i.naturalWidth > 0; })()`, chromedp.WithPollingTimeout(60*time.Second)))
	require.NoError(t, err, "the timeline picture loads")
	width := eval[int](t, ctx, `document.getElementById("timeline-img").naturalWidth`)
	loaded := eval[int](t, ctx, `document.querySelectorAll("details.step").length`)
	require.Contains(t, h1, "on sim")
	require.Contains(t, strings.ToLower(diagnosis), "critical")
	require.Contains(t, diagnosis, "pd_transfer_wedge")
	require.Equal(t, 1200, width, "the timeline PNG loaded at its size")
	require.Contains(t, diff, "+")
	require.Contains(t, diff, "--disable-overlap-schedule")
	require.Contains(t, approvals, f.approver)
	require.Contains(t, strings.ToLower(approvals), "approve")
	require.Contains(t, audit, "plan.approval")
	require.Contains(t, audit, f.approver)
	require.Contains(t, audit, "run.created")
	require.Contains(t, audit, "action.state")
	require.Regexp(t, `\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC`, audit, "entries carry their times")
	require.Contains(t, outcome, "verified")
	require.Positive(t, loaded, "every step run is on the page")

	// The raw output is collapsed until asked for.
	require.False(t, eval[bool](t, ctx, `document.querySelector("details.step").open`))

	// Copy as postmortem: the button shows (JavaScript runs) and the draft
	// it copies is the Markdown timeline.
	require.False(t, eval[bool](t, ctx, `document.getElementById("copy-postmortem").hidden`))
	md := eval[string](t, ctx, `document.getElementById("postmortem-md").textContent`)
	require.Contains(t, md, "# Postmortem draft:")
	require.Contains(t, md, "## Timeline")
	require.Contains(t, md, "approved")
	require.NotContains(t, md, "?l=", "the draft carries no credential")

	// The page has no list link for a visitor with a link only, and the
	// list refuses such a visitor.
	require.EqualValues(t, 403, open(t, ctx, ts.srv.URL+"/runs/"))
}

// An expired, tampered or borrowed link is refused with a page that says
// why; so are the picture and the draft behind it.
func TestBrowserRefusesBadLinks(t *testing.T) {
	f := theFixture(t)
	ts := newTestSite(t, f)
	ctx := browser(t)
	good := ts.site.RunURL(f.wedge.ID)
	u, err := url.Parse(good)
	require.NoError(t, err)
	l := u.Query().Get("l")
	tampered := l[:len(l)-1] + map[bool]string{true: "A", false: "B"}[!strings.HasSuffix(l, "A")]
	exp, sig, _ := strings.Cut(l, ".")
	cases := []struct {
		name, url, title string
	}{
		{"tampered signature", ts.srv.URL + "/runs/" + f.wedge.ID + "?l=" + tampered, "This link is not valid"},
		{"later expiry", ts.srv.URL + "/runs/" + f.wedge.ID + "?l=9" + exp + "." + sig, "This link is not valid"},
		{"another run", ts.srv.URL + "/runs/" + f.leaky.ID + "?l=" + l, "This link is not valid"},
		{"no link", ts.srv.URL + "/runs/" + f.wedge.ID, "Sign-in needed"},
		{"picture with a tampered link", ts.srv.URL + "/runs/" + f.wedge.ID + "/timeline.png?l=" + tampered, "This link is not valid"},
		{"draft of another run", ts.srv.URL + "/runs/" + f.leaky.ID + "/postmortem.md?l=" + l, "This link is not valid"},
	}
	for _, tc := range cases {
		require.EqualValues(t, 403, open(t, ctx, tc.url), tc.name)
		require.Equal(t, tc.title, text(t, ctx, "h1"), tc.name)
	}

	// The same link, a week and a bit later.
	ts.clock.mu.Lock()
	ts.clock.t = ts.clock.t.Add(7*24*time.Hour + time.Minute)
	ts.clock.mu.Unlock()
	require.EqualValues(t, 403, open(t, ctx, good))
	require.Equal(t, "This link has expired", text(t, ctx, "h1"))
	require.Contains(t, text(t, ctx, "main p.lead"), "expired")

	// A user name from an address that is not a trusted proxy is not
	// believed: a site trusting only 10.0.0.0/8 refuses the browser.
	st, err := store.Open(t.Context(), f.path)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	strict, err := web.New(web.Config{Signer: ts.signer, Logger: quiet(),
		Proxy: &web.ProxyTrust{Header: "X-Forwarded-User", From: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}}, st)
	require.NoError(t, err)
	srv := httptest.NewServer(strict)
	t.Cleanup(srv.Close)
	signIn(t, ctx, "mallory")
	require.EqualValues(t, 403, open(t, ctx, srv.URL+"/runs/"))
	require.EqualValues(t, 403, open(t, ctx, srv.URL+"/runs/"+f.wedge.ID))
}

// Secrets a step printed appear on no page: not in the run's page (its
// findings, raw output, postmortem draft), not in its Markdown, not in the
// run list.
func TestBrowserShowsNoSecret(t *testing.T) {
	f := theFixture(t)
	ts := newTestSite(t, f)
	ctx := browser(t)
	stored, err := store.Open(t.Context(), f.path)
	require.NoError(t, err)
	defer func() { require.NoError(t, stored.Close()) }()
	run, err := stored.GetRun(t.Context(), f.leaky.ID)
	require.NoError(t, err)
	for _, s := range planted {
		require.Contains(t, string(run.Report), s, "the store keeps what was observed, so the test can fail")
	}

	require.EqualValues(t, 200, open(t, ctx, ts.site.RunURL(f.leaky.ID)))
	// Open every collapsed step, so the raw output is rendered too.
	eval[any](t, ctx, `document.querySelectorAll("details").forEach(d => d.open = true)`)
	html, err := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("html")))
	require.NoError(t, err)
	href := eval[string](t, ctx, `document.getElementById("postmortem-link").href`)
	require.EqualValues(t, 200, open(t, ctx, href))
	md := eval[string](t, ctx, `document.body.innerText`)
	require.Contains(t, html, "db_password=[redacted]", "the evidence is shown, redacted")
	require.Contains(t, md, "# Postmortem draft")
	signIn(t, ctx, "alice")
	require.EqualValues(t, 200, open(t, ctx, ts.srv.URL+"/runs/"))
	list, err := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("html")))
	require.NoError(t, err)
	// Contains, not NotContains: a failure names the secret, not the
	// whole page.
	for _, s := range planted {
		require.NotContains(t, html, s, "the run page shows %q", s)
		require.NotContains(t, md, s, "the postmortem shows %q", s)
		require.NotContains(t, list, s, "the run list shows %q", s)
	}
	require.NotContains(t, html, string(linkKey), "the page shows the link secret")
}
