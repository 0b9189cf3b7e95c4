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
		{"token: abc123", "token: [redacted]"},
		{"auth_token=7f3a9c", "auth_token=[redacted]"},
		// Token counts are evidence: SGLang's batch lines keep them.
		{"Decode batch. #running-req: 1, #token: 4030, token usage: 0.02, #new-token: 12", "Decode batch. #running-req: 1, #token: 4030, token usage: 0.02, #new-token: 12"},
		{"max_tokens=16 token=0.5", "max_tokens=16 token=0.5"},
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

// The hints only make redaction faster: on every kind of text it removes
// what searching every pattern everywhere removes.
func TestHintsChangeNothing(t *testing.T) {
	t.Parallel()
	r, err := New([]string{`corp-\d+`}, secret.New("bot-token-value"))
	require.NoError(t, err)
	rl := r.rules.Load()
	plain := &Redactor{}
	plain.rules.Store(&rules{patterns: rl.patterns, anchored: rl.anchored, hints: make([]hint, len(rl.hints))})
	pieces := []string{
		"password=hunter2", "PASSWORD: 'x y'", "passwd=abc", "Password = \"q\"", "password=password=z", "tokentoken: a", "#new-token: 4030", "token: 12ab", "token=1.2.3", "api_key=1", "API-KEY: 2", "apikey:3",
		"secret:s3", "xoxb-1-2", "XOXB-1-2", "xapp-1-A", "Bearer abcdefgh123", "bearer short", "AKIAABCDEFGHIJKLMNOP", "xAKIAABCDEFGHIJKLMNOP",
		"-----BEGIN RSA PRIVATE KEY-----\nabc\n-----END RSA PRIVATE KEY-----", "toKen=kelvin", "paſſword=longs", "ünïcode password=ü", "corp-42",
		"bot-token-value", "  ", "\n", "status=200", "token", "=", "pass", "api", "key=v",
	}
	n := 0
	for i, a := range pieces {
		for j, b := range pieces {
			for _, sep := range []string{"", " ", "\n", ";", "&"} {
				in := a + sep + b
				require.Equal(t, plain.Redact(in), r.Redact(in), "%d/%d %q", i, j, in)
				n++
			}
		}
	}
	require.Greater(t, n, 4000)
}

// JSON redacts string values, escaped ones too, and no key.
func TestRedactJSON(t *testing.T) {
	t.Parallel()
	r, err := New(nil)
	require.NoError(t, err)
	cases := []struct{ in, want string }{
		{`{"a":"password=x"}`, `{"a":"password=[redacted]"}`},
		{`{"password=k" : "v", "b" :["token: t", 1, true, null, {"c":"ok"}]}`, `{"password=k" : "v", "b" :["token: [redacted]", 1, true, null, {"c":"ok"}]}`},
		{`["say \"password=q\" \\ done", "caf\u00e9 secret=s\n"]`, `["say \"password=[redacted]\" \\ done","café secret=[redacted]\n"]`},
		{`"nothing"`, `"nothing"`},
		{`{"a":"\"password=x\""}`, `{"a":"\"password=[redacted]\""}`},
	}
	for _, tc := range cases {
		got, err := r.JSON([]byte(tc.in))
		require.NoError(t, err, tc.in)
		require.JSONEq(t, tc.want, string(got), tc.in)
	}
	_, err = r.JSON([]byte(`{"a":"open`))
	require.Error(t, err)
}

// appendJSONString writes what encoding/json reads back as the same text.
func TestAppendJSONString(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "plain", `q"uote`, `back\slash`, "nl\ncr\rtab\t", "ctl\x01\x1f", "café ü ✓", "<html>&amp;", "\u2028"} {
		var back string
		require.NoError(t, json.Unmarshal(appendJSONString(nil, s), &back), "%q", s)
		require.Equal(t, s, back)
	}
}

// TestValues: a redactor of values hides them and nothing else, so that a
// report kept with a run's secret params hidden is otherwise kept as the
// checks saw it; none to hide gives nil, which hides nothing.
func TestValues(t *testing.T) {
	t.Parallel()
	require.Nil(t, Values())
	require.Nil(t, Values(secret.New("")))
	r := Values(secret.New("tok-1f2e3d4c"), secret.New(""), secret.New("a.b*c"))
	require.Equal(t, "given [redacted], password=hunter2, [redacted] not a.bbc",
		r.Redact("given tok-1f2e3d4c, password=hunter2, a.b*c not a.bbc"))
	require.Equal(t, "untouched", Values().Redact("untouched"))
}

// TestAdd: a value added to a redactor in use is hidden by it and by every
// redactor made from it, with what they hid before.
func TestAdd(t *testing.T) {
	t.Parallel()
	base, err := New(nil, secret.New("bot-token-value"))
	require.NoError(t, err)
	slack, err := base.With([]string{`site-\d+`})
	require.NoError(t, err)
	in := "bot-token-value site-2 new-passphrase password=x"
	require.Equal(t, "[redacted] [redacted] new-passphrase password=[redacted]", slack.Redact(in))
	base.Add(secret.New("new-passphrase"), secret.New(""))
	require.Equal(t, "[redacted] site-2 [redacted] password=[redacted]", base.Redact(in))
	require.Equal(t, "[redacted] [redacted] [redacted] password=[redacted]", slack.Redact(in))

	// A reload adds what it names every time: a value added again adds
	// nothing to search for.
	n := len(base.rules.Load().patterns)
	for range 100 {
		base.Add(secret.New("new-passphrase"), secret.New("bot-token-value"))
	}
	require.Len(t, base.rules.Load().patterns, n)
}
