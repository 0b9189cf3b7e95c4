package bot

import (
	"github.com/runbot/runbot/internal/secret"
	"testing"

	"github.com/stretchr/testify/require"
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
