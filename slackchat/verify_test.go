package slackchat

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/store"
)

// Slack's worked example from docs.slack.dev/authentication/verifying-requests-from-slack.
const (
	docSecret    = "8f742231b10e8888abcd99yyyzzz85a5"
	docTimestamp = "1531420618"
	docBody      = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
	docSignature = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"
)

func TestSignMatchesSlacksWorkedExample(t *testing.T) {
	t.Parallel()
	require.Equal(t, docSignature, sign([]byte(docSecret), docTimestamp, []byte(docBody)))

	// Our verifier accepts it at the time it was made.
	made, err := strconv.ParseInt(docTimestamp, 10, 64)
	require.NoError(t, err)
	v := verifier{secret: []byte(docSecret), now: func() time.Time { return time.Unix(made, 0).Add(time.Minute) }}
	h := http.Header{}
	h.Set(headerTimestamp, docTimestamp)
	h.Set(headerSignature, docSignature)
	require.NoError(t, v.verify(h, []byte(docBody)))
	// slack-go's verifier refuses the 2018 example as too old; so do we,
	// today.
	v.now = time.Now
	require.ErrorIs(t, v.verify(h, []byte(docBody)), errStale)
}

// Our verifier and slack-go's agree on fresh requests.
func TestVerifierAgreesWithSlackGo(t *testing.T) { //nolint:tparallel // the cases sit a second inside Slack's 5-minute window of real time: they run at once, in order
	t.Parallel()
	now := time.Now()
	body := []byte("text=hello&user_id=U1")
	cases := []struct {
		name string
		at   time.Time
		sig  func(ts string) string
		ok   bool
	}{
		{"fresh", now, func(ts string) string { return sign([]byte(docSecret), ts, body) }, true},
		{"4m59s old", now.Add(-4*time.Minute - 59*time.Second), func(ts string) string { return sign([]byte(docSecret), ts, body) }, true},
		{"6m old", now.Add(-6 * time.Minute), func(ts string) string { return sign([]byte(docSecret), ts, body) }, false},
		{"6m ahead", now.Add(6 * time.Minute), func(ts string) string { return sign([]byte(docSecret), ts, body) }, false},
		{"other secret", now, func(ts string) string { return sign([]byte("other"), ts, body) }, false},
		{"other body", now, func(ts string) string { return sign([]byte(docSecret), ts, []byte("text=bye")) }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ts := strconv.FormatInt(tc.at.Unix(), 10)
			h := http.Header{}
			h.Set(headerTimestamp, ts)
			h.Set(headerSignature, tc.sig(ts))
			ours := verifier{secret: []byte(docSecret), now: func() time.Time { return now }}.verify(h, body)
			sv, err := slack.NewSecretsVerifier(h, docSecret)
			if err == nil {
				_, _ = sv.Write(body)
				err = sv.Ensure()
			}
			require.Equal(t, tc.ok, ours == nil, "ours: %v", ours)
			require.Equal(t, tc.ok, err == nil, "slack-go: %v", err)
		})
	}
}

// Unverified requests get 401 and start nothing.
func TestUnverifiedRequestsAreRefused(t *testing.T) { //nolint:tparallel // the cases share one harness and check it ran nothing, in order
	t.Parallel()
	h := newHarness(t)
	cmd := []byte(h.commandForm(requester, opsChan, "stuck here "+h.dir).Encode())
	click := []byte(url.Values{"payload": {`{"type":"block_actions","user":{"id":"U0AAA"},"actions":[{"action_id":"runbot_approve","value":"p-1|x","action_ts":"1.1"}]}`}}.Encode())
	now := time.Now()
	cases := []struct {
		name string
		req  func(path string, body []byte) *http.Request
	}{
		{"no headers", func(path string, body []byte) *http.Request {
			r, _ := http.NewRequest(http.MethodPost, h.srv.URL+path, strings.NewReader(string(body)))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			return r
		}},
		{"wrong secret", func(path string, body []byte) *http.Request {
			return signed(t, h.srv.URL+path, body, now, "not-the-secret")
		}},
		{"stale", func(path string, body []byte) *http.Request {
			return signed(t, h.srv.URL+path, body, now.Add(-6*time.Minute), signingSecret)
		}},
		{"from the future", func(path string, body []byte) *http.Request {
			return signed(t, h.srv.URL+path, body, now.Add(6*time.Minute), signingSecret)
		}},
		{"tampered body", func(path string, body []byte) *http.Request {
			good := signed(t, h.srv.URL+path, body, now, signingSecret)
			r := signed(t, h.srv.URL+path, []byte(strings.Replace(string(body), "U0", "U9", 1)), now, signingSecret)
			r.Header = good.Header
			return r
		}},
		{"signature of another timestamp", func(path string, body []byte) *http.Request {
			r := signed(t, h.srv.URL+path, body, now, signingSecret)
			r.Header.Set(headerTimestamp, strconv.FormatInt(now.Unix()+1, 10))
			return r
		}},
		{"malformed timestamp", func(path string, body []byte) *http.Request {
			r := signed(t, h.srv.URL+path, body, now, signingSecret)
			r.Header.Set(headerTimestamp, "soon")
			return r
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, p := range []struct {
				path string
				body []byte
			}{{"/slack/commands", cmd}, {"/slack/interactions", click}} {
				resp, body := h.do(tc.req(p.path, p.body))
				require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "%s: %s", p.path, body)
			}
		})
	}
	h.idle()
	runs, err := h.store.ListRuns(t.Context(), store.RunFilter{})
	require.NoError(t, err)
	require.Empty(t, runs)
	require.Empty(t, h.rec.Calls(), "nothing reached Slack")
	require.Contains(t, h.logs.String(), "slack request refused: not verified")

	// The same command, signed properly, does run.
	resp, body := h.do(signed(t, h.srv.URL+"/slack/commands", cmd, now, signingSecret))
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	h.idle()
	runs, err = h.store.ListRuns(t.Context(), store.RunFilter{})
	require.NoError(t, err)
	require.Len(t, runs, 1)
}
