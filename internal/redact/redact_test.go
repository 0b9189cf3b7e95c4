package redact

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/secret"
)

func TestRedact(t *testing.T) {
	t.Parallel()
	r, err := New([]string{`internal-[0-9]{4}`, `(?i)cookie: (\S+)`}, secret.New("s3cr3t-signing-value"))
	require.NoError(t, err)
	cases := []struct{ in, want string }{
		{"token xoxb-1234-5678-abcdef in output", "token [redacted] in output"},
		{"Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig", "Authorization: Bearer [redacted]"},
		{"password=hunter2 user=bob", "password=[redacted] user=bob"},
		{"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaA\n-----END OPENSSH PRIVATE KEY-----\nafter", "[redacted]\nafter"},
		{"host internal-4242 up", "host [redacted] up"},
		{"signed with s3cr3t-signing-value here", "signed with [redacted] here"},
		{"nothing to hide: status=200", "nothing to hide: status=200"},
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, r.Redact(tc.in), tc.in)
	}
	_, err = New([]string{"("})
	require.ErrorContains(t, err, `redaction pattern "("`)
	require.Equal(t, "password=x", (*Redactor)(nil).Redact("password=x"), "a nil redactor removes nothing")
}

// Copy redacts every string of a value, however deep, and leaves keys and
// other types alone; the original is not changed.
func TestCopy(t *testing.T) {
	t.Parallel()
	r, err := New(nil)
	require.NoError(t, err)
	type doc struct {
		Lines  []string        `json:"lines"`
		Values map[string]any  `json:"values"`
		Raw    json.RawMessage `json:"raw"`
		N      int             `json:"n"`
	}
	in := doc{
		Lines:  []string{"ok", "password=hunter2"},
		Values: map[string]any{"password=k": []any{"token: abc123"}},
		Raw:    json.RawMessage(`{"diff":"+ api_key=zzz"}`),
		N:      7,
	}
	var out doc
	require.NoError(t, r.Copy(in, &out))
	require.Equal(t, []string{"ok", "password=[redacted]"}, out.Lines)
	require.Equal(t, map[string]any{"password=k": []any{"token: [redacted]"}}, out.Values)
	require.JSONEq(t, `{"diff":"+ api_key=[redacted]"}`, string(out.Raw))
	require.Equal(t, 7, out.N)
	require.Equal(t, "password=hunter2", in.Lines[1])
}

// With adds to a redactor without changing it.
func TestWith(t *testing.T) {
	t.Parallel()
	base, err := New([]string{`corp-\d+`}, secret.New("bot-token-value"))
	require.NoError(t, err)
	more, err := base.With([]string{`site-\d+`}, secret.New("link-key-value"))
	require.NoError(t, err)
	in := "corp-1 bot-token-value site-2 link-key-value password=x"
	require.Equal(t, "[redacted] [redacted] [redacted] [redacted] password=[redacted]", more.Redact(in))
	require.Equal(t, "[redacted] [redacted] site-2 link-key-value password=[redacted]", base.Redact(in))
	fresh, err := (*Redactor)(nil).With(nil, secret.New("link-key-value"))
	require.NoError(t, err)
	require.Equal(t, "corp-1 bot-token-value site-2 [redacted] password=[redacted]", fresh.Redact(in))
	_, err = base.With([]string{"("})
	require.Error(t, err)
}
