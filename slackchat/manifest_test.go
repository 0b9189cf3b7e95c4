package slackchat

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/runbot/runbot/commands"
)

// The app manifest names exactly the URLs the handler serves, the chat
// commands' default name, and the scopes the bot uses.
func TestSlackAppManifestMatchesTheBot(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../deploy/slack-app-manifest.yaml")
	require.NoError(t, err)
	var m struct {
		Features struct {
			SlashCommands []struct {
				Command      string `yaml:"command"`
				URL          string `yaml:"url"`
				ShouldEscape bool   `yaml:"should_escape"`
			} `yaml:"slash_commands"`
		} `yaml:"features"`
		OAuth struct {
			Scopes struct {
				Bot []string `yaml:"bot"`
			} `yaml:"scopes"`
		} `yaml:"oauth_config"`
		Settings struct {
			Interactivity struct {
				Enabled    bool   `yaml:"is_enabled"`
				RequestURL string `yaml:"request_url"`
			} `yaml:"interactivity"`
		} `yaml:"settings"`
	}
	require.NoError(t, yaml.Unmarshal(data, &m))
	require.Len(t, m.Features.SlashCommands, 1)
	cmd := m.Features.SlashCommands[0]
	require.Equal(t, commands.DefaultCommand, cmd.Command)
	require.False(t, cmd.ShouldEscape)
	require.True(t, m.Settings.Interactivity.Enabled)
	require.ElementsMatch(t, []string{"commands", "chat:write", "chat:write.public", "files:write", "usergroups:read"}, m.OAuth.Scopes.Bot)

	// Both URLs reach a route of the handler (401 unsigned, not 404).
	h := newHarness(t)
	for _, raw := range []string{cmd.URL, m.Settings.Interactivity.RequestURL} {
		u, err := url.Parse(raw)
		require.NoError(t, err)
		rec := httptest.NewRecorder()
		h.bot.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, u.Path, nil))
		require.Equal(t, http.StatusUnauthorized, rec.Code, raw)
	}
}
