package slackchat

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/secret"
)

func TestRedact(t *testing.T) {
	t.Parallel()
	r, err := NewRedactor([]string{`internal-[0-9]{4}`, `(?i)cookie: (\S+)`}, secret.New("s3cr3t-signing-value"))
	require.NoError(t, err)
	cases := []struct{ in, want string }{
		{"token xoxb-1234-5678-abcdef in output", "token [redacted] in output"},
		{"app token xapp-1-A0-123-abc", "app token [redacted]"},
		{"Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig", "Authorization: Bearer [redacted]"},
		{"AKIAABCDEFGHIJKLMNOP", "[redacted]"},
		{"password=hunter2 user=bob", "password=[redacted] user=bob"},
		{`export API_KEY="abc123"`, `export API_KEY="[redacted]"`},
		{"db secret: topsecret, port 5432", "db secret: [redacted], port 5432"},
		{"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaA\n-----END OPENSSH PRIVATE KEY-----\nafter", "[redacted]\nafter"},
		{"host internal-4242 up", "host [redacted] up"},
		{"Cookie: session=abc; other", "Cookie: [redacted] other"},
		{"signed with s3cr3t-signing-value here", "signed with [redacted] here"},
		{"nothing to hide: status=200", "nothing to hide: status=200"},
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, r.Redact(tc.in), tc.in)
	}
	_, err = NewRedactor([]string{"("})
	require.ErrorContains(t, err, `redaction pattern "("`)
}

// Everything a message shows is redacted before it is posted.
func TestMessagesAreRedactedBeforePosting(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) { c.Redact = []string{`hunter\d+`} })
	_, ts := h.runOnce(`note="password is hunter2"`)
	text := h.lastMessage(ts).Text()
	require.NotContains(t, text, "hunter2")
	require.Contains(t, text, "note = password is [redacted]", "command output is redacted")
	require.Contains(t, text, "note=password is [redacted]", "params are redacted")
}

// The redactor serve gives Slack (every secret the config names) is
// applied to everything posted, with the bot's own tokens: a command that
// prints the alert webhook's bearer token does not put it in the channel.
func TestConfigSecretsAreRedacted(t *testing.T) {
	t.Parallel()
	const planted = "alert-bearer-7f3c9d1e2b"
	red, err := NewRedactor(nil, secret.New(planted))
	require.NoError(t, err)
	h := newHarness(t, func(c *Config) { c.Redactor = red })
	_, ts := h.runOnce(`note="the token is ` + planted + `"`)
	text := h.lastMessage(ts).Text()
	require.NotContains(t, text, planted)
	require.Contains(t, text, "note=the token is [redacted]")
	for _, c := range h.rec.Calls() {
		require.NotContains(t, string(c.Body), planted, "%s", c.Method)
		require.NotContains(t, c.Form.Encode(), planted, "%s", c.Method)
	}
}

// The timeline picture shows text from the report, so the report it is
// drawn from is redacted too; the run's stored report is not changed.
func TestTimelineIsDrawnFromARedactedReport(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) { c.Redact = []string{`hunter\d+`} })
	tl := &fakeTimeline{png: testPNG(t)}
	withTimeline(h, tl)
	recordUploads(t, h.rec)
	run, _ := h.runOnce(`note="password is hunter2"`)

	require.Len(t, tl.reports, 1)
	drawn, err := json.Marshal(tl.reports[0])
	require.NoError(t, err)
	require.NotContains(t, string(drawn), "hunter2")
	require.Contains(t, string(drawn), "password is [redacted]")
	require.Equal(t, run.ID, tl.reports[0].RunID)
	require.NotEmpty(t, tl.reports[0].Findings, "the redacted copy keeps the report's content")

	stored, err := h.store.GetRun(t.Context(), run.ID)
	require.NoError(t, err)
	require.Contains(t, string(stored.Report), "hunter2", "the audit record keeps what was observed")
}
