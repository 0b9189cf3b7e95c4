package daemon

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/runbot/runbot/config"
	"github.com/runbot/runbot/dispatch"
	"github.com/runbot/runbot/internal/redact"
	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/slackchat"
	"github.com/runbot/runbot/store"
	"github.com/runbot/runbot/web"
)

// newWebSite builds the incident report site the config's web: block
// describes, nil when there is none. Its pages are redacted by red, the
// redaction of everything serve shows (Slack's messages included). Behind
// a trusted proxy its pages take votes through cast, from the people
// operators: maps to an identity.
func newWebSite(cfg *config.Config, st store.Store, red *redact.Redactor, log *slog.Logger, cast web.Ballot) (*web.Site, error) {
	w := cfg.Web
	if w == nil {
		return nil, nil
	}
	wc := web.Config{BaseURL: w.URL, Logger: log}
	if !w.LinkSecret.IsZero() {
		key, err := w.LinkSecret.Load()
		if err != nil {
			return nil, fmt.Errorf("web link secret (%s): %w", w.LinkSecret, err)
		}
		if wc.Signer, err = web.NewSigner([]byte(key.Reveal()), w.LinkTTL, nil); err != nil {
			return nil, fmt.Errorf("web link secret (%s): %w", w.LinkSecret, err)
		}
	}
	if w.TrustHeader != "" {
		wc.Proxy = &web.ProxyTrust{Header: w.TrustHeader, From: w.TrustedProxies}
		wc.Voting = &web.Voting{Cast: cast, Identities: cfg.Operators}
		if !w.LinkSecret.IsZero() {
			// Every replica loads the same secret: a page made by one is
			// voted from on another.
			key, err := w.LinkSecret.Load()
			if err != nil {
				return nil, fmt.Errorf("web link secret (%s): %w", w.LinkSecret, err)
			}
			wc.Voting.Key = formKey([]byte(key.Reveal()))
		}
	}
	wc.Redactor = red
	return web.New(wc, st)
}

// formKey is the key of the pages' vote forms, derived from the link
// secret so that neither key tells anything of the other.
func formKey(linkSecret []byte) []byte {
	m := hmac.New(sha256.New, linkSecret)
	m.Write([]byte("runbot web vote forms"))
	return m.Sum(nil)
}

// castFromWeb casts a report page's vote as a click's: recorded through
// the dispatcher (remediation.Remediator.VoteFrom, audited as from the
// web), and then, in the background, the run's message updated and a plan
// the vote approved applied, as FinishVote does for a click. Should that
// not start, serve's sweep applies the approved plan (ApprovedFrom).
func (d *daemonParts) castFromWeb(ctx context.Context, src remediation.Source, planID, user string, approve bool, hash string) (store.ApprovalResult, error) {
	rv := d.disp.RecordVote(ctx, dispatch.Vote{PlanID: planID, Hash: hash, User: user, Approve: approve, From: &src})
	err := d.disp.Go("finish the web vote on plan "+planID, d.disp.ApplyTimeout(), func(ctx context.Context) {
		if _, err := d.disp.FinishVote(ctx, rv); err != nil {
			d.log.Warn("web vote not shown or applied", "plan", planID, "err", err)
		}
	})
	if err != nil {
		d.log.Warn("web vote not shown or applied now; the sweep applies a plan it approved", "plan", planID, "err", err)
	}
	return rv.Result()
}

// withReportLinks has Slack link every message about a run to its report
// page, once *site is built (a nil site links nothing).
func withReportLinks(c slackchat.Config, site **web.Site) slackchat.Config {
	c.ReportURL = func(runID string) string { return (*site).RunURL(runID) }
	return c
}

// mountWeb serves the site's pages under /runs/ of the daemon's mux.
func mountWeb(mux *http.ServeMux, site *web.Site) {
	mux.Handle("GET /runs", site)
	mux.Handle("GET /runs/", site)
	mux.Handle("POST /runs/", site)
}
