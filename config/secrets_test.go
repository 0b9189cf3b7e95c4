package config_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/config"
)

// SecretValues loads every secret the config names, for redaction: a DSN
// is hidden whole and its password on its own too, in each form a DSN
// takes; a secret that does not load is named and the rest still load.
func TestSecretValues(t *testing.T) {
	for _, tc := range []struct{ name, dsn, password string }{
		{"url user info", "postgres://runbot:pw-url-1@db.internal/runbot", "pw-url-1"},
		{"url parameter", "postgres://runbot@db.internal/runbot?password=pw-param-2", "pw-param-2"},
		{"keyword form", "host=db.internal user=runbot password='pw-kw-3' dbname=runbot", "pw-kw-3"},
		{"no password", "postgres://runbot@db.internal/runbot", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("T_DSN", tc.dsn)
			t.Setenv("T_BOT", "xoxb-bot")
			t.Setenv("T_SIGN", "sign-value")
			t.Setenv("T_BEARER", "bearer-value")
			t.Setenv("T_LINK", "link-value")
			c, err := config.Parse("runbot.yaml", []byte(`store: {env: T_DSN}
slack: {mode: http, bot_token: {env: T_BOT}, signing_secret: {env: T_SIGN}, channel: C0OPS}
alerts: {bearer_token: {env: T_BEARER}}
web: {url: "https://runbot.example/", link_secret: {env: T_LINK}}
`))
			require.NoError(t, err)
			values, err := c.SecretValues()
			require.NoError(t, err)
			var got []string
			for _, v := range values {
				got = append(got, v.Reveal())
			}
			want := []string{tc.dsn, "xoxb-bot", "sign-value", "bearer-value", "link-value"}
			if tc.password != "" {
				want = append(want, tc.password)
			}
			require.ElementsMatch(t, want, got)
		})
	}
}

func TestSecretValuesNamesWhatDoesNotLoad(t *testing.T) {
	t.Setenv("T_BEARER", "bearer-value")
	c, err := config.Parse("runbot.yaml", []byte(`store: /var/lib/runbot/runbot.db
alerts: {bearer_token: {env: T_BEARER}}
web: {url: "https://runbot.example/", link_secret: {file: /nonexistent/link}}
`))
	require.NoError(t, err)
	values, err := c.SecretValues()
	require.ErrorContains(t, err, "web.link_secret")
	require.Len(t, values, 1, "the bearer token still loads")
	require.Equal(t, "bearer-value", values[0].Reveal())
}
