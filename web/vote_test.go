package web_test

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/store"
	"github.com/runbot/runbot/web"
)

// voteSite is a real report site on a real HTTP server over a real SQLite
// store, taking votes through the Remediator's VoteFrom, the path runbot
// approve and (through the dispatcher) a Slack click take.
type voteSite struct {
	t      *testing.T
	st     store.Store
	srv    *httptest.Server
	signer *web.Signer
	// plans counts the plans made, each on a deployment of its own: a
	// plan for the same deployment and diagnosis supersedes the last.
	plans int
}

// The proxy's users and the identities operators: maps them to: alice is
// an approver, bob one through the group sre, req the requester of every
// plan (and an approver), mallory no approver; carol is not mapped.
var voteIdentities = map[string]string{"alice": "U0ALICE", "bob": "U0BOB", "req": "U0REQ", "mallory": "U0MAL"}

func newVoteSite(t *testing.T) *voteSite {
	t.Helper()
	st, err := store.Open(t.Context(), filepath.Join(t.TempDir(), "runbot.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	rem := &remediation.Remediator{Store: st, Groups: remediation.Groups{"sre": {"U0BOB"}}}
	signer, err := web.NewSigner(linkKey, time.Hour, nil)
	require.NoError(t, err)
	site, err := web.New(web.Config{Signer: signer, Logger: quiet(),
		Proxy:  &web.ProxyTrust{Header: "X-Forwarded-User", From: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}},
		Voting: &web.Voting{Cast: rem.VoteFrom, Identities: voteIdentities}}, st)
	require.NoError(t, err)
	srv := httptest.NewServer(site)
	t.Cleanup(srv.Close)
	return &voteSite{t: t, st: st, srv: srv, signer: signer}
}

// plan stores a run requested by U0REQ and the plan it proposed, needing
// needed approvals under the two-person rule; blocked, when set, is why it
// cannot be applied.
func (vs *voteSite) plan(needed int, blocked string) store.Plan {
	t := vs.t
	t.Helper()
	run, err := vs.st.CreateRun(t.Context(), store.Run{Runbook: "sglang-pd-wedge", Trigger: store.TriggerCLI, RequestedBy: "U0REQ"})
	require.NoError(t, err)
	vs.plans++
	body := remediation.PlanBody{Runbook: "sglang-pd-wedge", Remediation: "restart-decode", Diagnosis: "pd_transfer_wedge",
		Deployment: fmt.Sprintf("sim-%d", vs.plans), Verify: []string{"decode_progress"}, Blocked: blocked}
	raw, err := json.Marshal(body)
	require.NoError(t, err)
	plan, _, err := vs.st.CreatePlan(t.Context(), store.Plan{RunID: run.ID, Remediation: body.Remediation, Diagnosis: body.Diagnosis,
		Deployment: body.Deployment, Hash: body.Hash(), Body: raw, RequestedBy: "U0REQ",
		Policy: store.Policy{Approvers: []string{"U0ALICE", "U0REQ", "@sre"}, MinApprovals: needed, TwoPerson: true}})
	require.NoError(t, err)
	return plan
}

// get fetches path as user ("" for nobody signed in) and returns the page.
func (vs *voteSite) get(path, user string) (int, string) {
	t := vs.t
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, vs.srv.URL+path, nil)
	require.NoError(t, err)
	if user != "" {
		req.Header.Set("X-Forwarded-User", user)
	}
	resp, err := vs.srv.Client().Do(req)
	require.NoError(t, err)
	defer func() { require.NoError(t, resp.Body.Close()) }()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

var (
	formField = regexp.MustCompile(`name="(plan|hash|token)" value="([^"]*)"`)
	formPath  = regexp.MustCompile(`<form class="vote noprint" id="vote-[^"]*" method="post" action="([^"]*)"`)
)

// form reads the vote form of page: its action and its hidden fields.
func form(t *testing.T, page string) (string, url.Values) {
	t.Helper()
	m := formPath.FindStringSubmatch(page)
	require.NotNil(t, m, "the page has no vote form:\n%s", page)
	f := url.Values{}
	for _, m := range formField.FindAllStringSubmatch(page, -1) {
		f.Set(m[1], html.UnescapeString(m[2]))
	}
	return html.UnescapeString(m[1]), f
}

// post sends a vote form to action (relative to run's page) as user with
// the extra headers, not following the redirect.
func (vs *voteSite) post(runID, action, user string, f url.Values, headers map[string]string) *http.Response {
	t := vs.t
	t.Helper()
	page, err := url.Parse(vs.srv.URL + "/runs/" + runID)
	require.NoError(t, err)
	to, err := page.Parse(action)
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, to.String(), strings.NewReader(f.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	if user != "" {
		req.Header.Set("X-Forwarded-User", user)
	}
	for k, v := range headers {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	c := *vs.srv.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := c.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

// A person signed in through the trusted proxy votes on a pending plan
// from its page, under the rules of a Slack click and runbot approve; the
// vote is audited as from the web and the page says what became of it. A
// signed link shows no buttons, and a vote without the proxy's word for
// who sends it, from another site, or on a form made for someone else is
// refused before it is cast.
func TestVoteFromThePage(t *testing.T) { //nolint:tparallel // the cases share one store and server
	t.Parallel()
	vs := newVoteSite(t)
	cases := []struct {
		name string
		// needed approvals of the plan; viewer opens the page, voter
		// (viewer when empty) posts its form with decision.
		needed          int
		viewer, voter   string
		decision        string
		edit            func(f url.Values)
		headers         map[string]string
		code            int
		says            string
		state           store.PlanState
		approvals       int
		auditedOutcome  string
		auditedApproval bool
	}{
		{name: "an approver settles the plan", needed: 1, viewer: "alice", decision: "approve",
			code: 303, says: "Your approval settled plan", state: store.PlanApproved, approvals: 1, auditedOutcome: remediation.OutcomeApproved},
		{name: "a group's member counts one of two", needed: 2, viewer: "bob", decision: "approve",
			code: 303, says: "1 of 2 approvals; it waits for 1 more", state: store.PlanProposed, approvals: 1, auditedOutcome: remediation.OutcomeCounted},
		{name: "an approver denies", needed: 1, viewer: "alice", decision: "deny",
			code: 303, says: "Your vote denied plan", state: store.PlanDenied, auditedOutcome: remediation.OutcomeDenied},
		{name: "someone not on the allow-list", needed: 1, viewer: "mallory", decision: "approve",
			code: 303, says: "U0MAL is not an approver of plan", state: store.PlanProposed, auditedOutcome: remediation.OutcomeRefused},
		{name: "the requester under the two-person rule", needed: 1, viewer: "req", decision: "approve",
			code: 303, says: "the two-person rule applies: U0REQ requested run", state: store.PlanProposed, auditedOutcome: remediation.OutcomeRefused},
		{name: "a plan hash the plan no longer has", needed: 1, viewer: "alice", decision: "approve",
			edit: func(f url.Values) { f.Set("hash", strings.Repeat("0", 64)) },
			code: 303, says: "changed since the page showed it", state: store.PlanProposed, auditedOutcome: remediation.OutcomeRefused},
		{name: "a forged post without the proxy's word", needed: 1, viewer: "alice", voter: "-", decision: "approve",
			code: 403, says: "Votes are taken only from people signed in", state: store.PlanProposed},
		{name: "a cross-site post", needed: 1, viewer: "alice", decision: "approve", headers: map[string]string{"Sec-Fetch-Site": "cross-site"},
			code: 403, says: "came from another site", state: store.PlanProposed},
		{name: "a cross-origin post from an old browser", needed: 1, viewer: "alice", decision: "approve", code: 403, says: "came from another site",
			state: store.PlanProposed, headers: map[string]string{"Sec-Fetch-Site": "", "Origin": "https://evil.example"}},
		{name: "another user's form", needed: 1, viewer: "alice", voter: "bob", decision: "approve",
			code: 403, says: "not one this site made for you", state: store.PlanProposed},
		{name: "a decision that is neither", needed: 1, viewer: "alice", decision: "maybe",
			code: 400, says: "Bad vote", state: store.PlanProposed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan := vs.plan(tc.needed, "")
			code, page := vs.get("/runs/"+plan.RunID, tc.viewer)
			require.Equal(t, http.StatusOK, code, page)
			action, f := form(t, page)
			require.Equal(t, plan.ID, f.Get("plan"))
			require.Equal(t, plan.Hash, f.Get("hash"), "the form carries the hash the page showed")
			f.Set("decision", tc.decision)
			if tc.edit != nil {
				tc.edit(f)
			}
			voter := tc.voter
			switch voter {
			case "":
				voter = tc.viewer
			case "-":
				voter = ""
			}
			resp := vs.post(plan.RunID, action, voter, f, tc.headers)
			require.Equal(t, tc.code, resp.StatusCode)
			body := ""
			if resp.StatusCode == http.StatusSeeOther {
				// Back to the run's page, which says what became of it.
				loc, err := url.Parse(vs.srv.URL + "/runs/" + plan.RunID + "/vote")
				require.NoError(t, err)
				back, err := loc.Parse(resp.Header.Get("Location"))
				require.NoError(t, err)
				require.Equal(t, "/runs/"+plan.RunID, back.Path)
				require.Equal(t, "plan-"+plan.ID, back.Fragment)
				code, body = vs.get(back.RequestURI(), tc.viewer)
				require.Equal(t, http.StatusOK, code)
			} else {
				b, err := io.ReadAll(resp.Body)
				require.NoError(t, err)
				body = string(b)
			}
			require.Contains(t, html.UnescapeString(body), tc.says)

			got, err := vs.st.GetPlan(t.Context(), plan.ID)
			require.NoError(t, err)
			require.Equal(t, tc.state, got.State)
			approvals, err := vs.st.Approvals(t.Context(), plan.ID)
			require.NoError(t, err)
			approved := 0
			for _, a := range approvals {
				if a.Decision == store.Approve {
					approved++
				}
			}
			require.Equal(t, tc.approvals, approved)
			events, err := vs.st.Audit(t.Context(), store.AuditFilter{PlanID: plan.ID, Kind: remediation.AuditVoteSource})
			require.NoError(t, err)
			if tc.auditedOutcome == "" {
				require.Empty(t, events, "a vote refused before it was cast is not audited as one")
				return
			}
			require.Len(t, events, 1)
			var src remediation.VoteSource
			require.NoError(t, json.Unmarshal(events[0].Detail, &src))
			require.Equal(t, remediation.Source{Channel: remediation.ChannelWeb, Login: tc.viewer}, src.Source)
			require.Equal(t, tc.auditedOutcome, src.Outcome)
			require.Equal(t, voteIdentities[tc.viewer], events[0].Actor)
		})
	}
}

// Who sees the buttons: a person the proxy names and operators: maps, on
// a plan waiting for votes that nothing blocks. A signed link alone, a
// signed-in person without an identity and a blocked plan show none; the
// blocked plan says why, for everyone, as its Slack message does.
func TestVoteButtons(t *testing.T) { //nolint:tparallel // the cases share one store and server
	t.Parallel()
	vs := newVoteSite(t)
	pending := vs.plan(1, "")
	blocked := vs.plan(1, "the circuit breaker of sim is open after 3 failed remediations; a person must reset it")
	cases := []struct {
		name    string
		plan    store.Plan
		link    bool
		user    string
		buttons bool
		says    string
	}{
		{name: "signed in and mapped", plan: pending, user: "alice", buttons: true, says: "as U0ALICE, signed in as alice"},
		{name: "a signed link alone", plan: pending, link: true, says: pending.ID},
		{name: "signed in, not mapped", plan: pending, user: "carol", says: "does not map to an approver identity"},
		{name: "a blocked plan, signed in", plan: blocked, user: "alice", says: "Cannot be applied: the circuit breaker of sim is open"},
		{name: "a blocked plan by its link", plan: blocked, link: true, says: "Cannot be applied: the circuit breaker of sim is open"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := "/runs/" + tc.plan.RunID
			if tc.link {
				path += "?l=" + vs.signer.Sign(tc.plan.RunID)
			}
			code, page := vs.get(path, tc.user)
			require.Equal(t, http.StatusOK, code, page)
			require.Contains(t, html.UnescapeString(page), tc.says)
			if tc.buttons {
				require.Contains(t, page, `value="approve">Approve</button>`)
				return
			}
			require.NotContains(t, page, "<form class=\"vote")
			require.NotContains(t, page, `name="token"`)
		})
	}
	// A vote's outcome in a link's query is not shown to one who did not
	// sign in to cast it.
	_, page := vs.get("/runs/"+pending.RunID+"?vote=approved&plan="+pending.ID+"&l="+vs.signer.Sign(pending.RunID), "")
	require.NotContains(t, page, "vote-outcome")
}
