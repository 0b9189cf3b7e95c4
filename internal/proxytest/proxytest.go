// Package proxytest is an authenticating reverse proxy for tests of the
// report pages behind one, as oauth2-proxy stands in front of runbot in a
// deployment: it signs people in, and tells the site who they are in a
// header the site trusts from the proxy's address only.
package proxytest

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
)

// Header is the header the proxy names the signed-in user in.
const Header = "X-Forwarded-User"

// Signing starts a proxy in front of site. GET /sign-in?as=USER&to=PATH
// signs USER in (a session cookie) and redirects to PATH; every other
// request goes to site with Header naming the signed-in user, and without
// any Header the browser sent itself. The browser's Host is kept, as
// proxies that pass the Host through do, so the site judges a vote's
// origin by the address the browser used.
func Signing(t *testing.T, site string) *httptest.Server {
	t.Helper()
	to, err := url.Parse(site)
	require.NoError(t, err)
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(to)
		r.Out.Host = r.In.Host
		r.Out.Header.Del(Header)
		if c, err := r.In.Cookie("session"); err == nil && c.Value != "" {
			r.Out.Header.Set(Header, c.Value)
		}
	}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /sign-in", func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "session", Value: r.URL.Query().Get("as"), Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode})
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusSeeOther)
	})
	mux.Handle("/", rp)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}
