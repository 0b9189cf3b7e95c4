// Package web serves runbot's incident report pages: a list of runs that
// filters by runbook, deployment, trigger, outcome and time, and one page
// per run with its diagnosis, findings and their full evidence, every
// step's raw output, the timeline picture, the remediation plan with its
// diff, approvals, actions, verification, rollback and the audit trail,
// and a postmortem draft in Markdown. Pages are rendered on the server
// from html/template, work without JavaScript and print well; everything
// shown is redacted exactly as Slack messages are.
//
// Access is by signed link (Signer: an HMAC over the run id and an expiry,
// the "Full report" links of chat messages) or, for the run list and every
// run, by a user name an authenticating proxy puts in a header, believed
// only from the proxy's addresses (ProxyTrust). With Voting, a person
// signed in through the proxy may also approve or deny a run's pending
// plan on its page, under the same rules as a Slack click (vote.go).
package web

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/runbot/runbot/incident"
	"github.com/runbot/runbot/internal/redact"
	"github.com/runbot/runbot/store"
)

// Store is what the site reads.
type Store interface {
	incident.Store
	ListRuns(ctx context.Context, f store.RunFilter) ([]store.Run, error)
}

// Config sets up a Site. Signer or Proxy (or both) must be set: the site
// never serves a run to an anonymous request.
type Config struct {
	// BaseURL is the site's public URL, the prefix of the links chat
	// messages carry (https://runbot.example.com/).
	BaseURL *url.URL
	Signer  *Signer
	Proxy   *ProxyTrust
	// Redactor is the chat platform's redaction (slackchat's), applied to
	// everything shown.
	Redactor *redact.Redactor
	// RequestTimeout bounds the store reads and rendering of one request
	// (default 15s).
	RequestTimeout time.Duration
	// MaxPages bounds how many run pages, timeline pictures and
	// postmortem drafts are made at once (default 2); more wait, up to
	// RequestTimeout, and are then answered 503 with a Retry-After. A run
	// with a long output takes a few hundred megabytes to read: ten
	// people opening it at once must not take the daemon's memory.
	MaxPages int
	// Voting, when set, shows Approve and Deny on a pending plan to people
	// signed in through Proxy, which it requires.
	Voting *Voting
	// Logger is slog.Default() when nil; Now is time.Now when nil.
	Logger *slog.Logger
	Now    func() time.Time
}

// Site is the report site's http.Handler, to be mounted at /runs/ of the
// daemon's mux.
type Site struct {
	st      Store
	base    *url.URL
	signer  *Signer
	proxy   *ProxyTrust
	redact  *redact.Redactor
	timeout time.Duration
	log     *slog.Logger
	now     func() time.Time
	mux     *http.ServeMux
	csp     string
	// voting is nil when the pages take no votes.
	voting *voting
	// pages holds a token for each run page being made (see
	// Config.MaxPages).
	pages chan struct{}
}

// defaultMaxPages is Config.MaxPages when unset. Making a page keeps a CPU
// busy, and a small daemon's host has two: more pages at once would not
// be made sooner, only hold more memory while they are made.
const defaultMaxPages = 2

// errBusy is a page that waited for MaxPages others for too long.
var errBusy = errors.New("too many run pages are being made at once")

// New builds the site over st.
func New(cfg Config, st Store) (*Site, error) {
	if st == nil {
		return nil, errors.New("web: a store is required")
	}
	if cfg.Signer == nil && (cfg.Proxy == nil || cfg.Proxy.Header == "") {
		return nil, errors.New("web: configure signed links (a link secret) or a trusted proxy header, or both")
	}
	if cfg.Proxy != nil && cfg.Proxy.Header != "" && len(cfg.Proxy.From) == 0 {
		return nil, fmt.Errorf("web: the trusted header %s needs the proxies it is trusted from", cfg.Proxy.Header)
	}
	if cfg.Voting != nil && (cfg.Proxy == nil || cfg.Proxy.Header == "") {
		return nil, errors.New("web: votes are taken only from people signed in through a trusted proxy: configure its header")
	}
	if cfg.Redactor == nil {
		// Never show a run unredacted: without the chat's redactor the
		// default patterns still apply.
		r, err := redact.New(nil)
		if err != nil {
			return nil, fmt.Errorf("web: %w", err)
		}
		cfg.Redactor = r
	}
	s := &Site{st: st, base: cfg.BaseURL, signer: cfg.Signer, proxy: cfg.Proxy, redact: cfg.Redactor,
		timeout: cfg.RequestTimeout, log: cfg.Logger, now: cfg.Now}
	if s.timeout <= 0 {
		s.timeout = 15 * time.Second
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if cfg.MaxPages <= 0 {
		cfg.MaxPages = defaultMaxPages
	}
	s.pages = make(chan struct{}, cfg.MaxPages)
	s.log = s.log.With("component", "web")
	if s.now == nil {
		s.now = time.Now
	}
	// The pages carry their style and their one script inline, each
	// allowed by its hash and nothing else: no request leaves for other
	// origins, and injected markup cannot run.
	s.csp = fmt.Sprintf("default-src 'none'; img-src 'self'; style-src '%s'; script-src '%s'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
		hashOf(pageCSS), hashOf(pageJS))
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("GET /runs", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "runs/", http.StatusMovedPermanently)
	})
	s.mux.HandleFunc("GET /runs/{$}", s.list)
	s.mux.HandleFunc("GET /runs/{id}", s.runPage)
	s.mux.HandleFunc("GET /runs/{id}/timeline.png", s.timelinePNG)
	s.mux.HandleFunc("GET /runs/{id}/postmortem.md", s.postmortem)
	if cfg.Voting != nil {
		v, err := newVoting(cfg.Voting, cfg.BaseURL)
		if err != nil {
			return nil, err
		}
		s.voting = v
		s.mux.HandleFunc("POST /runs/{id}/vote", s.vote)
	}
	return s, nil
}

func hashOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256-" + base64.StdEncoding.EncodeToString(sum[:])
}

// RunURL is the signed link to a run's page, for chat messages; "" when
// the site has no public URL or no link secret.
func (s *Site) RunURL(runID string) string {
	if s == nil || s.base == nil || s.signer == nil {
		return ""
	}
	return s.signer.RunURL(s.base, runID)
}

// ServeHTTP implements http.Handler.
func (s *Site) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", s.csp)
	// A signed link is a credential in the URL: it must not leak to
	// another site in a Referer, nor stay in a shared cache.
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "private, no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	s.mux.ServeHTTP(w, r)
}

// errorPage is what a refused or failed request shows.
type errorPage struct {
	Status  int
	Title   string
	Message string
	Hint    string
}

func (s *Site) fail(w http.ResponseWriter, r *http.Request, err error) {
	p := errorPage{Status: http.StatusInternalServerError, Title: "Something went wrong", Message: "The page could not be made; the error is in runbot's log."}
	var le *LinkError
	switch {
	case errors.As(err, &le) && errors.Is(err, ErrLinkExpired):
		p = errorPage{Status: http.StatusForbidden, Title: "This link has expired",
			Message: "Links to run reports stop working after a while. This one expired " + le.Expired.UTC().Format("2006-01-02 15:04 UTC") + ".",
			Hint:    "Open the run's message in Slack again: each update of the message carries a fresh link. Or open the run from the run list behind your sign-in."}
	case errors.Is(err, ErrLinkInvalid):
		p = errorPage{Status: http.StatusForbidden, Title: "This link is not valid",
			Message: "Its signature does not match the run it points to: the link was changed, cut short, or made by another runbot.",
			Hint:    "Use the Full report link exactly as runbot posted it."}
	case errors.Is(err, ErrNoLink):
		p = errorPage{Status: http.StatusForbidden, Title: "Sign-in needed",
			Message: "Run reports open from the signed Full report link in runbot's Slack messages, or behind the site's sign-in.",
			Hint:    "Follow the link from Slack as it was posted."}
	case errors.Is(err, errListNeedsSignIn):
		p = errorPage{Status: http.StatusForbidden, Title: "Sign-in needed",
			Message: "The list of runs is shown only to people signed in through the site's authenticating proxy.",
			Hint:    "A single run's report opens from the Full report link in its Slack message."}
	case errors.Is(err, errCrossSite):
		p = errorPage{Status: http.StatusForbidden, Title: "Vote refused",
			Message: "The vote was not sent from runbot's own page (the browser said it came from another site), so it was not counted.",
			Hint:    "Open the run's page and vote there."}
	case errors.Is(err, errVoteNeedsSignIn):
		p = errorPage{Status: http.StatusForbidden, Title: "Sign-in needed",
			Message: "Votes are taken only from people signed in through the site's authenticating proxy; a signed link opens a report, it does not vote.",
			Hint:    "Vote in Slack, or open the run behind the site's sign-in."}
	case errors.Is(err, errVoteForm):
		p = errorPage{Status: http.StatusForbidden, Title: "Vote refused",
			Message: "The vote's form is not one this site made for you (the page is old, or was made for someone else or by another runbot), so it was not counted.",
			Hint:    "Reload the run's page and vote again."}
	case errors.Is(err, errBadVote):
		p = errorPage{Status: http.StatusBadRequest, Title: "Bad vote", Message: "The vote could not be read, so it was not counted.", Hint: "Reload the run's page and vote again."}
	case errors.Is(err, store.ErrNotFound):
		p = errorPage{Status: http.StatusNotFound, Title: "No such run", Message: "runbot has no run " + shortened(r.PathValue("id")) + "."}
	case errors.Is(err, errBusy):
		p = errorPage{Status: http.StatusServiceUnavailable, Title: "Busy",
			Message: "runbot is making other long run pages and could not start this one in time.",
			Hint:    "Reload the page in a few seconds."}
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
		s.log.Warn("web page refused: busy", "path", shortened(r.URL.Path), "err", err)
	case errors.Is(err, errBadFilter):
		p = errorPage{Status: http.StatusBadRequest, Title: "Bad filter", Message: err.Error()}
	default:
		s.log.Error("web request failed", "path", shortened(r.URL.Path), "err", err)
	}
	if p.Status == http.StatusForbidden {
		s.log.Info("web request refused", "path", shortened(r.URL.Path), "why", err.Error(), "remote", r.RemoteAddr)
	}
	var buf bytes.Buffer
	if terr := pages.ExecuteTemplate(&buf, "error", p); terr != nil {
		http.Error(w, p.Title+": "+p.Message, p.Status)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(p.Status)
	_, _ = w.Write(buf.Bytes())
}

// render writes a page template to w, rendered in full first so that a
// template error is a clean 500, not half a page.
func (s *Site) render(w http.ResponseWriter, r *http.Request, name string, data any) {
	var buf bytes.Buffer
	if err := pages.ExecuteTemplate(&buf, name, data); err != nil {
		s.fail(w, r, fmt.Errorf("render %s: %w", name, err))
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(buf.Bytes())
}

// withLink adds the visitor's link parameter to a relative URL, so that a
// page opened by a signed link can load its picture and draft.
func withLink(rel string, v visitor) string {
	if v.Link == "" {
		return rel
	}
	sep := "?"
	if strings.Contains(rel, "?") {
		sep = "&"
	}
	return rel + sep + linkParam + "=" + url.QueryEscape(v.Link)
}

// retryAfter is the seconds a busy site asks a client to wait.
const retryAfter = 5

// enter waits for a turn to make a run page (see Config.MaxPages), up to
// the request timeout or until the client leaves, and returns the func
// that ends the turn.
func (s *Site) enter(r *http.Request) (func(), error) {
	t := time.NewTimer(s.timeout)
	defer t.Stop()
	select {
	case s.pages <- struct{}{}:
		return func() { <-s.pages }, nil
	case <-t.C:
		return nil, fmt.Errorf("%w: waited %s", errBusy, s.timeout)
	case <-r.Context().Done():
		return nil, fmt.Errorf("%w: %w", errBusy, context.Cause(r.Context()))
	}
}

func (s *Site) ctx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(r.Context(), s.timeout, errors.New("web request took too long"))
}

// shortened keeps what a request names to a length worth logging and
// showing: an unauthenticated client chooses it, and a 100 KB path must
// not become a 100 KB log line per request.
func shortened(s string) string {
	const limit = 120
	if len(s) <= limit {
		return s
	}
	return strings.ToValidUTF8(s[:limit], "") + fmt.Sprintf("… (%d bytes)", len(s))
}
