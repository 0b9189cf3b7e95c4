package daemon

import (
	"fmt"
	"log/slog"
	"net/http"

	"github.com/runbot/runbot/config"
	"github.com/runbot/runbot/internal/redact"
	"github.com/runbot/runbot/slackchat"
	"github.com/runbot/runbot/store"
	"github.com/runbot/runbot/web"
)

// newWebSite builds the incident report site the config's web: block
// describes, nil when there is none. Its pages are redacted by red, the
// redaction of everything serve shows (Slack's messages included).
func newWebSite(cfg *config.Config, st store.Store, red *redact.Redactor, log *slog.Logger) (*web.Site, error) {
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
	}
	wc.Redactor = red
	return web.New(wc, st)
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
}
