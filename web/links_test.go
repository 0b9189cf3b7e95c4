package web

import (
	"errors"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 6, 18, 20, 44, 12, 0, time.UTC)

// A link opens its run until it expires; any change to the run id, the
// expiry or the signature, or another key, refuses it; an expired link
// says when it expired.
func TestSignerVerify(t *testing.T) { //nolint:tparallel // the cases move one shared clock
	t.Parallel()
	now := t0
	s, err := NewSigner([]byte("0123456789abcdef-key"), time.Hour, func() time.Time { return now })
	require.NoError(t, err)
	other, err := NewSigner([]byte("0123456789abcdef-other"), time.Hour, func() time.Time { return now })
	require.NoError(t, err)
	// The same key with a longer TTL (the config before link_ttl was
	// shortened), and a replica whose clock is 30 s ahead.
	long, err := NewSigner([]byte("0123456789abcdef-key"), 30*24*time.Hour, func() time.Time { return t0 })
	require.NoError(t, err)
	ahead, err := NewSigner([]byte("0123456789abcdef-key"), time.Hour, func() time.Time { return t0.Add(30 * time.Second) })
	require.NoError(t, err)
	l := s.Sign("r-1")
	exp, sig, ok := strings.Cut(l, ".")
	require.True(t, ok)
	cases := []struct {
		name  string
		run   string
		value string
		at    time.Time
		want  error
	}{
		{"fresh", "r-1", l, t0, nil},
		{"just before expiry", "r-1", l, t0.Add(time.Hour - time.Second), nil},
		{"at expiry", "r-1", l, t0.Add(time.Hour), ErrLinkExpired},
		{"long after", "r-1", l, t0.Add(30 * 24 * time.Hour), ErrLinkExpired},
		{"another run", "r-2", l, t0, ErrLinkInvalid},
		{"a prefix of the run", "r-", l, t0, ErrLinkInvalid},
		{"later expiry", "r-1", "9" + exp + "." + sig, t0, ErrLinkInvalid},
		{"signature cut", "r-1", l[:len(l)-2], t0, ErrLinkInvalid},
		{"another key", "r-1", other.Sign("r-1"), t0, ErrLinkInvalid},
		{"no dot", "r-1", exp + sig, t0, ErrLinkInvalid},
		{"not a number", "r-1", "soon." + sig, t0, ErrLinkInvalid},
		{"empty", "r-1", "", t0, ErrNoLink},
		{"signed for longer than the TTL", "r-1", long.Sign("r-1"), t0, ErrLinkInvalid},
		{"signed by a replica a little ahead", "r-1", ahead.Sign("r-1"), t0, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			now = tc.at
			err := s.Verify(tc.run, tc.value)
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tc.want)
			var le *LinkError
			require.ErrorAs(t, err, &le)
			if errors.Is(tc.want, ErrLinkExpired) {
				require.Equal(t, t0.Add(time.Hour), le.Expired)
				require.Contains(t, err.Error(), "2026-06-18 21:44 UTC")
			}
		})
	}
}

func TestNewSignerRefusesWeakSetups(t *testing.T) {
	t.Parallel()
	_, err := NewSigner([]byte("short"), 0, nil)
	require.ErrorContains(t, err, "at least 16 bytes")
	_, err = NewSigner([]byte("0123456789abcdef"), -time.Hour, nil)
	require.ErrorContains(t, err, "positive")
	s, err := NewSigner([]byte("0123456789abcdef"), 0, func() time.Time { return t0 })
	require.NoError(t, err)
	exp, _, _ := strings.Cut(s.Sign("r"), ".")
	require.Equal(t, "1782420252", exp, "the default TTL is a week")
	require.Equal(t, int64(1782420252), t0.Add(DefaultLinkTTL).Unix())
}

// RunURL puts the link under the site's public URL, path prefix included,
// with one query parameter of characters chat platforms leave alone.
func TestRunURL(t *testing.T) {
	t.Parallel()
	s, err := NewSigner([]byte("0123456789abcdef"), time.Hour, func() time.Time { return t0 })
	require.NoError(t, err)
	for _, base := range []string{"https://ops.example.com", "https://ops.example.com/", "https://ops.example.com/runbot/"} {
		u, err := url.Parse(base)
		require.NoError(t, err)
		link := s.RunURL(u, "r-20260618-204412-3f9a1c")
		require.Regexp(t, `^https://ops\.example\.com(/runbot)?/runs/r-20260618-204412-3f9a1c\?l=\d+\.[A-Za-z0-9_-]{43}$`, link, base)
	}
}

// A user header is believed only from a trusted proxy's address.
func TestProxyTrust(t *testing.T) {
	t.Parallel()
	p := &ProxyTrust{Header: "X-Forwarded-User", From: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}}
	cases := []struct {
		remote, user, want string
	}{
		{"10.1.2.3:5555", "alice", "alice"},
		{"[fd00::1]:5555", "alice", "alice"},
		{"[::ffff:10.0.0.9]:5555", "alice", "alice"},
		{"192.168.1.1:5555", "alice", ""},
		{"127.0.0.1:5555", "alice", ""},
		{"10.1.2.3:5555", "  ", ""},
		{"garbage", "alice", ""},
	}
	for _, tc := range cases {
		r := httptest.NewRequest("GET", "/runs/", nil)
		r.RemoteAddr = tc.remote
		r.Header.Set("X-Forwarded-User", tc.user)
		require.Equal(t, tc.want, p.user(r), "%s %q", tc.remote, tc.user)
	}
	require.Empty(t, (*ProxyTrust)(nil).user(httptest.NewRequest("GET", "/", nil)))
}
