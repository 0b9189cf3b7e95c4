package web_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/proxytest"
	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/store"
)

// Approving from the report page in a real browser (Chromium) behind an
// authenticating proxy: the person the proxy signed in sees Approve and
// Deny on the plan waiting for votes, clicks Approve, and the page says
// the approval settled the plan; the store has the plan approved by the
// identity operators: maps them to, audited as a vote from the web. A
// browser that is not signed in, even one that sends X-Forwarded-User
// itself, is not let in.
func TestBrowserApprovesFromThePage(t *testing.T) {
	t.Parallel()
	vs := newVoteSite(t)
	proxy := proxytest.Signing(t, vs.srv.URL)
	plan := vs.plan(1, "")
	page := proxy.URL + "/runs/" + plan.RunID
	buttons := `document.querySelectorAll("form.vote button[name=decision]").length`

	anon := browser(t)
	signIn(t, anon, "alice") // the browser's own header: the proxy drops it
	require.Equal(t, int64(http.StatusForbidden), open(t, anon, page), "a browser the proxy did not sign in is not let in")
	require.Zero(t, eval[int](t, anon, buttons))

	ctx := browser(t)
	require.Equal(t, int64(http.StatusOK), open(t, ctx, proxy.URL+"/sign-in?as=alice&to="+url.QueryEscape("/runs/"+plan.RunID)))
	require.Equal(t, 2, eval[int](t, ctx, buttons), "Approve and Deny for alice")
	resp, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(`form.vote button[value=approve]`)))
	require.NoError(t, err, "click Approve")
	require.Equal(t, int64(http.StatusOK), resp.Status, "the vote leads back to the run's page")
	require.Contains(t, text(t, ctx, "body"), "Your approval settled plan")
	require.Zero(t, eval[int](t, ctx, buttons), "a settled plan has no buttons left")

	got, err := vs.st.GetPlan(t.Context(), plan.ID)
	require.NoError(t, err)
	require.Equal(t, store.PlanApproved, got.State)
	approvals, err := vs.st.Approvals(t.Context(), plan.ID)
	require.NoError(t, err)
	require.Len(t, approvals, 1)
	require.Equal(t, "U0ALICE", approvals[0].User)
	require.Equal(t, plan.Hash, approvals[0].PlanHash, "bound to the plan the page showed")
	events, err := vs.st.Audit(t.Context(), store.AuditFilter{PlanID: plan.ID, Kind: remediation.AuditVoteSource})
	require.NoError(t, err)
	require.Len(t, events, 1)
	var src remediation.VoteSource
	require.NoError(t, json.Unmarshal(events[0].Detail, &src))
	require.Equal(t, remediation.Source{Channel: remediation.ChannelWeb, Login: "alice"}, src.Source)
	require.Equal(t, remediation.OutcomeApproved, src.Outcome)
}
