package config

import (
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/runbot/runbot/internal/secret"
	"github.com/runbot/runbot/internal/yamlnode"
)

// Web configures the incident report pages `runbot serve` serves under
// /runs/ and the "Full report" links chat messages carry:
//
//	web:
//	  url: https://runbot.example.com/
//	  link_secret: {file: /etc/runbot/web-link-secret}
//	  link_ttl: 7d
//	  trust_header: X-Forwarded-User
//	  trusted_proxies: [10.0.0.0/8]
//
// A link is signed with link_secret and opens its run's page for link_ttl;
// behind an authenticating proxy, the user it names in trust_header sees
// the run list and every run, believed only from trusted_proxies.
type Web struct {
	// URL is the site's public address, the prefix of the links.
	URL *url.URL
	// LinkSecret signs the links; zero when only the proxy grants access.
	LinkSecret Secret
	LinkTTL    time.Duration
	// TrustHeader names the header an authenticating proxy sets to the
	// user; TrustedProxies are the addresses it is believed from.
	TrustHeader    string
	TrustedProxies []netip.Prefix
	At             Positions
}

// DefaultLinkTTL is how long a link opens its page unless link_ttl says
// otherwise: a week, long enough for the postmortem.
const DefaultLinkTTL = 7 * 24 * time.Hour

// maxLinkTTL bounds link_ttl: a link is a credential that cannot be
// revoked short of changing the secret, so it must not live for ever.
const maxLinkTTL = 90 * 24 * time.Hour

func decodeWeb(d *yamlnode.Decoder, n *yaml.Node) *Web {
	w := &Web{LinkTTL: DefaultLinkTTL, At: Positions{"": yamlnode.PosOf(n)}}
	d.Fields(n, "web", []string{"url", "link_secret", "link_ttl", "trust_header", "trusted_proxies"}, func(key string, _, v *yaml.Node) {
		w.At[key] = yamlnode.PosOf(v)
		switch key {
		case "url":
			s := d.String(v, "web.url")
			u, err := url.Parse(s)
			switch {
			case err != nil:
				d.Errorf(v, "web.url: %v", err)
			case (u.Scheme != "https" && u.Scheme != "http") || u.Host == "":
				d.Errorf(v, "web.url must be an absolute http(s) URL such as https://runbot.example.com/, got %q", s)
			case u.RawQuery != "" || u.Fragment != "" || u.User != nil:
				d.Errorf(v, "web.url: give the site's address only, without a query, a fragment or credentials, got %q", s)
			default:
				w.URL = u
			}
		case "link_secret":
			w.LinkSecret = decodeSecret(d, v, "web.link_secret")
		case "link_ttl":
			w.LinkTTL = decodeDays(d, v, "web.link_ttl")
			if w.LinkTTL < time.Minute || w.LinkTTL > maxLinkTTL {
				d.Errorf(v, "web.link_ttl must be between 1m and 90d, got %q", v.Value)
			}
		case "trust_header":
			w.TrustHeader = d.String(v, "web.trust_header")
			if !headerName(w.TrustHeader) {
				d.Errorf(v, "web.trust_header: %q is not an HTTP header name", w.TrustHeader)
			}
		case "trusted_proxies":
			list := d.Strings(v, "web.trusted_proxies")
			for i, s := range list {
				at := v
				if v.Kind == yaml.SequenceNode && i < len(v.Content) {
					at = v.Content[i]
				}
				p, err := parsePrefix(s)
				if err != nil {
					d.Errorf(at, "web.trusted_proxies: %q is not an address or a CIDR range such as 10.0.0.0/8", s)
					continue
				}
				if p.Bits() == 0 {
					d.Warnf(at, "web.trusted_proxies: %s trusts the %s header from any address: anyone who reaches runbot can name themselves", s, w.TrustHeader)
				}
				w.TrustedProxies = append(w.TrustedProxies, p)
			}
		}
	})
	if _, ok := w.At["url"]; !ok {
		d.Errorf(n, "web: url is required (the site's public address, the prefix of the Full report links)")
	}
	if w.LinkSecret.IsZero() && w.TrustHeader == "" {
		d.Errorf(n, "web: configure link_secret (signed links from chat messages) or trust_header with trusted_proxies (an authenticating proxy), or both")
	}
	_, proxies := w.At["trusted_proxies"]
	if w.TrustHeader != "" && !proxies {
		d.ErrorAt(w.At.Of("trust_header"), "web.trust_header needs trusted_proxies: the addresses of the proxy that sets it")
	}
	if w.TrustHeader == "" && proxies {
		d.ErrorAt(w.At.Of("trusted_proxies"), "web.trusted_proxies needs trust_header: the header those proxies set to the user")
	}
	return w
}

// decodeDays reads a duration that may also be given in days ("7d").
func decodeDays(d *yamlnode.Decoder, n *yaml.Node, what string) time.Duration {
	if n.Kind == yaml.ScalarNode && strings.HasSuffix(n.Value, "d") {
		days, err := strconv.ParseFloat(strings.TrimSuffix(n.Value, "d"), 64)
		if err != nil || days <= 0 {
			d.Errorf(n, "%s must be a duration like 12h or 7d, got %q", what, n.Value)
			return 0
		}
		return time.Duration(days * float64(24*time.Hour))
	}
	return d.Duration(n, what)
}

// parsePrefix reads a CIDR range or a single address (a range of one).
func parsePrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		return p.Masked(), err
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// headerName reports whether s is an HTTP header name (RFC 9110 token).
func headerName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		ok := r < 0x7f && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", r))
		if !ok {
			return false
		}
	}
	return true
}

// LinkKey is the key runbot serve signs its report pages' links with
// (web.link_secret), loaded here. When no link can be signed the error
// says why, at the config's file:line:col: no web: block, no link_secret
// (the pages open only through the proxy), or one this user cannot load.
func (c *Config) LinkKey() (secret.Value, error) {
	w := c.Web
	if w == nil {
		return secret.Value{}, fmt.Errorf("%s: no web: block, so runbot serve has no report pages to link to; configure web: with url and link_secret", c.File)
	}
	if w.LinkSecret.IsZero() {
		at := w.At.Of("")
		return secret.Value{}, fmt.Errorf("%s:%d:%d: web: has no link_secret, so runbot serve signs no links (its pages open only through the proxy of web.trust_header); add web.link_secret to sign them", c.File, at.Line, at.Col)
	}
	key, err := w.LinkSecret.Load()
	if err != nil {
		at := w.At.Of("link_secret")
		return secret.Value{}, fmt.Errorf("%s:%d:%d: web.link_secret (%s) does not load here, so no link can be signed (run this as a user who can read it): %w", c.File, at.Line, at.Col, w.LinkSecret, err)
	}
	return key, nil
}
