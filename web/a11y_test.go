package web_test

import (
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// a11yProblems lists what a page gets wrong of the basic accessibility
// checks: a language, one h1 and no skipped heading level, a label for
// every form control, a text alternative for every image, and a contrast
// of at least 4.5:1 (WCAG AA) between every text and its background.
const a11yProblems = `(() => {
  const out = [];
  if (!document.documentElement.lang) out.push("no lang");
  const hs = Array.from(document.querySelectorAll("h1,h2,h3,h4,h5,h6")).map(h => +h.tagName[1]);
  if (hs.filter(l => l === 1).length !== 1) out.push("h1 count " + hs.filter(l => l === 1).length);
  for (let i = 1; i < hs.length; i++) if (hs[i] > hs[i-1] + 1) out.push("heading skips from h" + hs[i-1] + " to h" + hs[i]);
  for (const c of document.querySelectorAll("input,select,textarea")) {
    if (c.type === "hidden") continue;
    if (!(c.id && document.querySelector('label[for="' + c.id + '"]')) && !c.getAttribute("aria-label")) out.push("unlabelled " + c.outerHTML);
  }
  for (const i of document.querySelectorAll("img")) if (!i.alt) out.push("no alt " + i.src);
  const rgb = s => { const m = s.match(/[\d.]+/g).map(Number); return {r: m[0], g: m[1], b: m[2], a: m.length > 3 ? m[3] : 1}; };
  const lum = c => { const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); }; return 0.2126 * f(c.r) + 0.7152 * f(c.g) + 0.0722 * f(c.b); };
  const bg = el => { for (; el; el = el.parentElement) { const c = rgb(getComputedStyle(el).backgroundColor); if (c.a > 0) return c; } return {r: 255, g: 255, b: 255, a: 1}; };
  for (const el of document.querySelectorAll("body *")) {
    const own = Array.from(el.childNodes).some(n => n.nodeType === 3 && n.textContent.trim());
    if (!own || el.offsetParent === null && getComputedStyle(el).position !== "fixed") continue;
    if (el.closest(".skip")) continue;
    const fg = lum(rgb(getComputedStyle(el).color)), b = lum(bg(el));
    const ratio = (Math.max(fg, b) + 0.05) / (Math.min(fg, b) + 0.05);
    if (ratio < 4.5) out.push("contrast " + ratio.toFixed(2) + " " + el.tagName + "." + el.className + ": " + el.textContent.trim().slice(0, 40));
  }
  return out.slice(0, 20);
})()`

// The run page and the run list pass the basic accessibility checks; the
// run page prints without its navigation and buttons and with every
// collapsed section open.
func TestBrowserPagesAreAccessibleAndPrint(t *testing.T) {
	f := theFixture(t)
	ts := newTestSite(t, f)
	ctx := browser(t)
	require.EqualValues(t, 200, open(t, ctx, ts.site.RunURL(f.wedge.ID)))
	require.Empty(t, eval[[]string](t, ctx, a11yProblems), "run page")

	_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Media: "print"})
	require.NoError(t, err)
	for _, sel := range []string{".toc", ".bar", "#copy-postmortem", ".noprint"} {
		require.Equal(t, "none", eval[string](t, ctx, `getComputedStyle(document.querySelector("`+sel+`")).display`), sel)
	}
	require.Equal(t, 0, eval[int](t, ctx, `(window.dispatchEvent(new Event("beforeprint")), document.querySelectorAll("details:not([open])").length)`), "printing opens every section")

	signIn(t, ctx, "alice")
	require.EqualValues(t, 200, open(t, ctx, ts.srv.URL+"/runs/"))
	require.Empty(t, eval[[]string](t, ctx, a11yProblems), "run list")
}

// Without JavaScript the run list still filters (a plain GET form) and the
// run page still has its postmortem draft; only the copy button, which
// needs a script, stays hidden.
func TestBrowserWorksWithoutJavaScript(t *testing.T) {
	f := theFixture(t)
	ts := newTestSite(t, f)
	ctx := browser(t)
	_, err := chromedp.Call(ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true})
	require.NoError(t, err)
	signIn(t, ctx, "alice")
	require.EqualValues(t, 200, open(t, ctx, ts.srv.URL+"/runs/"))
	require.NoError(t, chromedp.Do(ctx, chromedp.SetValue(chromedp.ID("f-trigger"), "schedule")))
	resp, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(`form.filters button[type=submit]`)))
	require.NoError(t, err)
	require.EqualValues(t, 200, resp.Status)
	require.Equal(t, []string{f.leaky.ID}, rows(t, ctx))

	require.EqualValues(t, 200, open(t, ctx, ts.srv.URL+"/runs/"+f.wedge.ID))
	require.Contains(t, text(t, ctx, "#diagnosis ~ .diagnosis"), "pd_transfer_wedge")
	// The page's own script did not run (the DevTools protocol still
	// evaluates): the button it would show stays hidden.
	require.True(t, eval[bool](t, ctx, `document.getElementById("copy-postmortem").hidden`), "the page's script is off")
	require.Contains(t, eval[string](t, ctx, `document.getElementById("postmortem-md").textContent`), "## Timeline")
}
