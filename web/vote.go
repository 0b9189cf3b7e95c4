package web

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/runbot/runbot/incident"
	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/store"
)

// Ballot records one vote cast on a run's page. It is the path every vote
// takes, remediation.Remediator.VoteFrom: the approvers and groups, N of
// M, the two-person rule, the expiry and the exact plan hash decide it, and
// the audit log says it came from the web. Serve's goes through the
// dispatcher, which then updates the run's chat message and applies a plan
// the vote approved, as it does for a click. The page decides no rule.
type Ballot func(ctx context.Context, src remediation.Source, planID, user string, approve bool, shownHash string) (store.ApprovalResult, error)

// Voting lets people signed in through the trusted proxy approve or deny a
// run's pending plan on its page. A signed link never grants a vote: it is
// a bearer token anyone who holds the URL can use.
type Voting struct {
	Cast Ballot
	// Identities maps the user the proxy names to the identity approval
	// policies name them by: the config's operators:, the mapping runbot
	// approve uses for OS users. A signed-in user it does not name sees
	// why there are no buttons instead of them.
	Identities map[string]string
	// Key makes the forms' tokens; a random one when empty. Replicas
	// behind one proxy need the same key, or a page made by one is
	// refused by another (serve derives it from web.link_secret).
	Key []byte
}

// voting is a site's Voting, as the site keeps it.
type voting struct {
	cast Ballot
	// identities is swapped whole by SetIdentities (a reload).
	identities atomic.Pointer[map[string]string]
	key        []byte
	// origin refuses cross-site form posts by Sec-Fetch-Site and Origin.
	origin *http.CrossOriginProtection
}

// newVoting checks cfg and keeps it for the site based at base.
func newVoting(cfg *Voting, base *url.URL) (*voting, error) {
	if cfg.Cast == nil {
		return nil, errors.New("web: voting needs a ballot (Voting.Cast)")
	}
	v := &voting{cast: cfg.Cast, key: cfg.Key, origin: http.NewCrossOriginProtection()}
	if len(v.key) == 0 {
		v.key = make([]byte, 32)
		_, _ = rand.Read(v.key) // crypto/rand.Read never fails.
	}
	ids := cfg.Identities
	v.identities.Store(&ids)
	if base != nil && base.Host != "" {
		// The proxy may rewrite Host; the site's public address is its
		// origin all the same.
		if err := v.origin.AddTrustedOrigin(base.Scheme + "://" + base.Host); err != nil {
			return nil, fmt.Errorf("web: the site's origin: %w", err)
		}
	}
	return v, nil
}

// SetIdentities replaces the mapping of proxy users to approver
// identities (Voting.Identities), as a config reload changes operators:.
// It does nothing on a site without voting.
func (s *Site) SetIdentities(ids map[string]string) {
	if s == nil || s.voting == nil {
		return
	}
	s.voting.identities.Store(&ids)
}

// identity is the approver identity proxy user user votes as.
func (v *voting) identity(user string) (string, bool) {
	id, ok := (*v.identities.Load())[user]
	return id, ok && id != ""
}

// token is the form token of one plan's page for one signed-in user: an
// HMAC over the user, the run and the plan, so that a page made for one
// person cannot be replayed by another, nor a form built elsewhere.
func (v *voting) token(user, runID, planID string) string {
	m := hmac.New(sha256.New, v.key)
	for _, part := range []string{"runbot vote form", user, runID, planID} {
		m.Write([]byte(part))
		m.Write([]byte{0})
	}
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// Errors of a vote refused before it was cast.
var (
	errCrossSite       = errors.New("a vote must be sent from runbot's own page")
	errVoteNeedsSignIn = errors.New("votes are taken only from people signed in through the site's authenticating proxy")
	errVoteForm        = errors.New("the vote's form is not one this site made for you")
	errBadVote         = errors.New("bad vote")
)

// maxVoteForm bounds a vote's body: three short fields and a token.
const maxVoteForm = 4 << 10

// Vote outcomes and refusals, as the redirect after a vote names them for
// the page to say.
const (
	votedApproved   = "approved"
	votedDenied     = "denied"
	votedCounted    = "counted"
	refusedApprover = "not-approver"
	refusedUnknown  = "approvers-unknown"
	refusedSelf     = "two-person"
	refusedStale    = "stale"
	refusedExpired  = "expired"
	refusedClosed   = "closed"
	refusedNoPlan   = "no-plan"
	refusedUnmapped = "no-identity"
)

// vote takes an Approve or Deny from a run's page: it believes only the
// proxy for who is voting, never the form, checks that the form came from
// the page it made for that person, casts the vote through the Ballot and
// sends the browser back to the page, which says what became of it.
func (s *Site) vote(w http.ResponseWriter, r *http.Request) {
	if err := s.voting.origin.Check(r); err != nil {
		s.fail(w, r, fmt.Errorf("%w: %w", errCrossSite, err))
		return
	}
	id := r.PathValue("id")
	if !runIDPattern.MatchString(id) {
		s.fail(w, r, fmt.Errorf("run id %.40q: %w", id, store.ErrNotFound))
		return
	}
	user := s.proxy.user(r)
	if user == "" {
		s.fail(w, r, errVoteNeedsSignIn)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxVoteForm)
	if err := r.ParseForm(); err != nil {
		s.fail(w, r, fmt.Errorf("%w: %w", errBadVote, err))
		return
	}
	planID, hash := r.PostForm.Get("plan"), r.PostForm.Get("hash")
	var approve bool
	switch r.PostForm.Get("decision") {
	case "approve":
		approve = true
	case "deny":
	default:
		s.fail(w, r, fmt.Errorf("%w: the decision must be approve or deny", errBadVote))
		return
	}
	if planID == "" || hash == "" {
		s.fail(w, r, fmt.Errorf("%w: the plan and its hash are required", errBadVote))
		return
	}
	if !hmac.Equal([]byte(r.PostForm.Get("token")), []byte(s.voting.token(user, id, planID))) {
		s.fail(w, r, errVoteForm)
		return
	}
	q := url.Values{"plan": {planID}}
	identity, ok := s.voting.identity(user)
	if !ok {
		q.Set("vote", refusedUnmapped)
		s.votedRedirect(w, id, planID, q)
		return
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	res, err := s.voting.cast(ctx, remediation.Source{Channel: remediation.ChannelWeb, Login: user}, planID, identity, approve, hash)
	outcome := refusalCode(err)
	switch {
	case outcome != "":
	case err != nil && !errors.Is(err, remediation.ErrSourceNotAudited):
		s.fail(w, r, fmt.Errorf("vote on plan %s: %w", shortened(planID), err))
		return
	case res.Settled && res.Plan.State == store.PlanApproved:
		outcome = votedApproved
	case res.Settled && res.Plan.State == store.PlanDenied:
		outcome = votedDenied
	default:
		outcome = votedCounted
		q.Set("n", strconv.Itoa(res.Approvals))
		q.Set("of", strconv.Itoa(res.Needed))
	}
	if errors.Is(err, remediation.ErrSourceNotAudited) {
		s.log.Warn("web vote stands without its source entry", "plan", planID, "err", err)
	}
	s.log.Info("vote from a report page", "run", id, "plan", planID, "user", user, "identity", identity, "approve", approve, "outcome", outcome)
	q.Set("vote", outcome)
	s.votedRedirect(w, id, planID, q)
}

// votedRedirect sends the browser back to run id's page after a vote
// (303, so that a reload does not post it again), by a reference relative
// to the vote's own URL, so that a proxy's path prefix is kept.
func (s *Site) votedRedirect(w http.ResponseWriter, id, planID string, q url.Values) {
	u := url.URL{Path: "../" + id, RawQuery: q.Encode(), Fragment: "plan-" + planID}
	w.Header().Set("Location", u.String())
	w.WriteHeader(http.StatusSeeOther)
}

// refusalCode names why a vote was not counted, or "" when err is no
// refusal.
func refusalCode(err error) string {
	var se *store.ApprovalError
	switch {
	case err == nil:
		return ""
	case errors.Is(err, remediation.ErrNotApprover):
		return refusedApprover
	case errors.Is(err, remediation.ErrApproversUnknown):
		return refusedUnknown
	case errors.Is(err, store.ErrNotFound):
		return refusedNoPlan
	case errors.As(err, &se) && se.Reason == store.RefusedSelf:
		return refusedSelf
	case errors.As(err, &se) && se.Reason == store.RefusedStale:
		return refusedStale
	case errors.As(err, &se) && se.Reason == store.RefusedExpired:
		return refusedExpired
	case errors.As(err, &se):
		return refusedClosed
	}
	return ""
}

// planVote is what a plan's part of the page shows about voting on it.
type planVote struct {
	// Blocked says why the plan cannot be applied (its breaker open, its
	// rate limit reached), shown instead of the buttons, as the Slack
	// message shows it.
	Blocked string
	// Ballot is the Approve/Deny form, for a signed-in person the config
	// maps to an identity; NoVote says why a signed-in person has none.
	Ballot *ballotView
	NoVote string
}

// ballotView is one plan's Approve/Deny form.
type ballotView struct {
	// Action is the form's URL, relative to the page.
	Action              string
	PlanID, Hash, Token string
	User, Identity      string
}

// voteNotice says on the page what became of the visitor's vote.
type voteNotice struct {
	Class, Text string
}

// votes prepares, for each plan of inc waiting for votes, what its part of
// the page shows visitor v, and the notice of the vote that redirected
// here (q, the page's query).
func (s *Site) votes(inc *incident.Incident, v visitor, q url.Values) (map[string]planVote, *voteNotice) {
	out := map[string]planVote{}
	for _, p := range inc.Plans {
		if p.Plan.State != store.PlanProposed {
			continue
		}
		var pv planVote
		if p.Body != nil && p.Body.Blocked != "" {
			pv.Blocked = p.Body.Blocked
			out[p.Plan.ID] = pv
			continue
		}
		if s.voting == nil || v.User == "" {
			continue
		}
		identity, ok := s.voting.identity(v.User)
		if !ok {
			pv.NoVote = fmt.Sprintf("You are signed in as %s, whom the config's operators: does not map to an approver identity, so you cannot vote here. Vote in Slack, or ask for %s to be added to operators:.", v.User, v.User)
			out[p.Plan.ID] = pv
			continue
		}
		pv.Ballot = &ballotView{Action: url.PathEscape(inc.Run.ID) + "/vote", PlanID: p.Plan.ID, Hash: p.Plan.Hash,
			Token: s.voting.token(v.User, inc.Run.ID, p.Plan.ID), User: v.User, Identity: identity}
		out[p.Plan.ID] = pv
	}
	if v.User == "" || s.voting == nil || q.Get("vote") == "" {
		return out, nil
	}
	return out, s.notice(inc, v, q)
}

// notice words the outcome a vote's redirect names for the page; nil when
// the query names none. The query carries codes and counts, never text, so
// a crafted link cannot make the page say something of its own.
func (s *Site) notice(inc *incident.Incident, v visitor, q url.Values) *voteNotice {
	planID := q.Get("plan")
	var plan *incident.Plan
	for i := range inc.Plans {
		if inc.Plans[i].Plan.ID == planID {
			plan = &inc.Plans[i]
		}
	}
	if plan == nil {
		return nil
	}
	identity, _ := s.voting.identity(v.User)
	refused := func(format string, args ...any) *voteNotice {
		return &voteNotice{Class: "s-bad", Text: "Your vote was refused: " + fmt.Sprintf(format, args...)}
	}
	switch q.Get("vote") {
	case votedApproved:
		return &voteNotice{Class: "s-ok", Text: fmt.Sprintf("Your approval settled plan %s: it is approved, and runbot applies it now. This page shows how it goes when you reload it.", planID)}
	case votedDenied:
		return &voteNotice{Class: "s-ok", Text: fmt.Sprintf("Your vote denied plan %s: it will not be applied.", planID)}
	case votedCounted:
		n, _ := strconv.Atoi(q.Get("n"))
		of, _ := strconv.Atoi(q.Get("of"))
		if of > n {
			return &voteNotice{Class: "s-info", Text: fmt.Sprintf("Your vote on plan %s was counted: %d of %d approvals; it waits for %d more.", planID, n, of, of-n)}
		}
		return &voteNotice{Class: "s-info", Text: fmt.Sprintf("Your vote on plan %s was counted (%d of %d approvals).", planID, n, of)}
	case refusedApprover:
		return refused("%s is not an approver of plan %s (approvers: %s). Nothing was changed.", identity, planID, strings.Join(plan.Plan.Policy.Approvers, ", "))
	case refusedUnknown:
		return refused("whether %s may approve plan %s could not be checked (an approver group could not be looked up). Nothing was changed; try again.", identity, planID)
	case refusedSelf:
		return refused("the two-person rule applies: %s requested run %s and cannot approve its remediation; another approver has to. Nothing was changed.", identity, plan.Plan.RunID)
	case refusedStale:
		return refused("plan %s changed since the page showed it, so your vote was not counted. Look at the plan again below.", planID)
	case refusedExpired:
		return refused("the approval window of plan %s has closed. Run the runbook again for a fresh plan.", planID)
	case refusedClosed:
		return refused("plan %s is %s; votes are no longer taken.", planID, strings.ReplaceAll(string(plan.Plan.State), "_", " "))
	case refusedNoPlan:
		return refused("there is no plan %s.", planID)
	case refusedUnmapped:
		return refused("you are signed in as %s, whom the config's operators: does not map to an approver identity. Nothing was changed.", v.User)
	}
	return nil
}
