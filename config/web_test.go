package config_test

import (
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/config"
)

const webBase = "store: /var/lib/runbot/runbot.db\n"

func TestWebConfig(t *testing.T) {
	t.Parallel()
	c, err := config.Parse("runbot.yaml", []byte(webBase+`web:
  url: https://ops.example.com/runbot/
  link_secret: {file: /etc/runbot/web-link-secret}
  link_ttl: 3d
  trust_header: X-Forwarded-User
  trusted_proxies: [10.0.0.0/8, 192.168.1.7, "fd00::/8"]
`))
	require.NoError(t, err)
	w := c.Web
	require.NotNil(t, w)
	require.Equal(t, "https://ops.example.com/runbot/", w.URL.String())
	require.Equal(t, config.Secret{File: "/etc/runbot/web-link-secret"}, w.LinkSecret)
	require.Equal(t, 72*time.Hour, w.LinkTTL)
	require.Equal(t, "X-Forwarded-User", w.TrustHeader)
	require.Equal(t, []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.168.1.7/32"), netip.MustParsePrefix("fd00::/8")}, w.TrustedProxies)
	require.Equal(t, 3, w.At.Of("url").Line)

	c, err = config.Parse("runbot.yaml", []byte(webBase+"web: {url: 'https://runbot.example.com', link_secret: {env: RUNBOT_LINK_SECRET}}\n"))
	require.NoError(t, err)
	require.Equal(t, config.DefaultLinkTTL, c.Web.LinkTTL, "links last a week unless link_ttl says otherwise")
	require.Empty(t, c.Web.TrustHeader)

	c, err = config.Parse("runbot.yaml", []byte(webBase))
	require.NoError(t, err)
	require.Nil(t, c.Web, "no web: no pages and no links")
}

// Every mistake in web: is reported at its file:line:col.
func TestWebConfigErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, yaml string
		want       []string
	}{
		{"nothing to grant access", "web: {url: https://x.example/}", []string{"runbot.yaml:2:6: web: configure link_secret (signed links from chat messages) or trust_header with trusted_proxies"}},
		{"no url", "web: {link_secret: {env: S}}", []string{"runbot.yaml:2:6: web: url is required"}},
		{"relative url", "web: {url: /runs, link_secret: {env: S}}", []string{`runbot.yaml:2:12: web.url must be an absolute http(s) URL such as https://runbot.example.com/, got "/runs"`}},
		{"url with a query", "web: {url: 'https://x.example/?a=1', link_secret: {env: S}}", []string{"runbot.yaml:2:12: web.url: give the site's address only"}},
		{"secret value", "web: {url: https://x.example/, link_secret: hunter22}", []string{"runbot.yaml:2:45: web.link_secret must be a reference such as {env: NAME} or {file: /path}, never the secret itself"}},
		{"bad ttl", "web: {url: https://x.example/, link_secret: {env: S}, link_ttl: soon}", []string{`runbot.yaml:2:65: web.link_ttl must be a duration like 30s or 5m, got "soon"`}},
		{"ttl too long", "web: {url: https://x.example/, link_secret: {env: S}, link_ttl: 400d}", []string{`runbot.yaml:2:65: web.link_ttl must be between 1m and 90d, got "400d"`}},
		{"header without proxies", "web: {url: https://x.example/, trust_header: X-Forwarded-User}", []string{"runbot.yaml:2:46: web.trust_header needs trusted_proxies"}},
		{"proxies without header", "web: {url: https://x.example/, link_secret: {env: S}, trusted_proxies: [10.0.0.1]}", []string{"runbot.yaml:2:72: web.trusted_proxies needs trust_header"}},
		{"bad header", "web: {url: https://x.example/, trust_header: 'X User', trusted_proxies: [10.0.0.1]}", []string{`runbot.yaml:2:46: web.trust_header: "X User" is not an HTTP header name`}},
		{"bad proxy", "web: {url: https://x.example/, trust_header: X-User, trusted_proxies: [10.0.0.1, proxy.local]}", []string{`runbot.yaml:2:82: web.trusted_proxies: "proxy.local" is not an address or a CIDR range`}},
		{"unknown key", "web: {url: https://x.example/, link_secret: {env: S}, link_tll: 1d}", []string{`runbot.yaml:2:55: web: unknown key "link_tll" (did you mean "link_ttl"?)`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := config.Parse("runbot.yaml", []byte(webBase+tc.yaml+"\n"))
			require.Error(t, err)
			for _, w := range tc.want {
				require.Contains(t, err.Error(), w)
			}
			require.NotContains(t, err.Error(), "hunter22", "a pasted secret is never echoed")
		})
	}
}

// A proxy range of everything is allowed but warned about: it lets anyone
// name themselves.
func TestWebConfigWarnsOfTrustingEveryone(t *testing.T) {
	t.Parallel()
	_, problems, err := config.Check(writeTemp(t, webBase+"web: {url: https://x.example/, trust_header: X-User, trusted_proxies: [0.0.0.0/0]}\n"))
	require.NoError(t, err)
	require.NoError(t, problems.Err())
	require.Len(t, problems, 1)
	require.Contains(t, problems[0].String(), "trusts the X-User header from any address", problems[0].String())
}

func writeTemp(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "runbot.yaml")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}

// The link key loads from web.link_secret; without a web: block, without
// a link_secret or with one that does not load here, the error says why
// no link can be signed, where the config says it.
func TestLinkKey(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key := filepath.Join(dir, "key")
	require.NoError(t, os.WriteFile(key, []byte("0123456789abcdef0123456789abcdef\n"), 0o600))
	for _, tc := range []struct {
		name, web string
		wantErr   string
	}{
		{"a secret that loads", "web:\n  url: https://ops.example.com/\n  link_secret: {file: " + key + "}\n", ""},
		{"no web: block", "", "runbot.yaml: no web: block"},
		{"no link_secret", "web:\n  url: https://ops.example.com/\n  trust_header: X-Forwarded-User\n  trusted_proxies: [10.0.0.0/8]\n", "runbot.yaml:3:3: web: has no link_secret"},
		{"a secret that does not load", "web:\n  url: https://ops.example.com/\n  link_secret: {file: " + filepath.Join(dir, "missing") + "}\n", "runbot.yaml:4:16: web.link_secret (file " + filepath.Join(dir, "missing") + ") does not load here"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := config.Parse("runbot.yaml", []byte(webBase+tc.web))
			require.NoError(t, err)
			got, err := c.LinkKey()
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, "0123456789abcdef0123456789abcdef", got.Reveal())
		})
	}
}
