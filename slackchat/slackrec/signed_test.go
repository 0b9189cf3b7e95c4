package slackrec_test

import (
	"encoding/json"
	"io"
	"net/url"
	"testing"

	"github.com/slack-go/slack"
	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/slackchat/slackrec"
)

// A click is what slack-go, as runbot reads it, takes for a signed button
// press: the signature verifies with the secret and only with it, and the
// payload names the user, the message and the button.
func TestClickIsWhatSlackPosts(t *testing.T) {
	t.Parallel()
	click := slackrec.Click{User: "U0APP", Channel: "C0OPS", TS: "1700000000.000100", ActionID: "runbot_approve", Value: "plan-1|hash", ResponseURL: "http://example.invalid/r"}
	for _, tc := range []struct {
		name   string
		secret string
		valid  bool
	}{
		{name: "the app's secret", secret: "s3cret", valid: true},
		{name: "another secret", secret: "other"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req, err := click.Request(t.Context(), "http://runbot.invalid/", "s3cret")
			require.NoError(t, err)
			require.Equal(t, "/slack/interactions", req.URL.Path)
			v, err := slack.NewSecretsVerifier(req.Header, tc.secret)
			require.NoError(t, err)
			body, err := io.ReadAll(req.Body)
			require.NoError(t, err)
			_, err = v.Write(body)
			require.NoError(t, err)
			if !tc.valid {
				require.Error(t, v.Ensure())
				return
			}
			require.NoError(t, v.Ensure())
			form, err := url.ParseQuery(string(body))
			require.NoError(t, err)
			var cb slack.InteractionCallback
			require.NoError(t, json.Unmarshal([]byte(form.Get("payload")), &cb))
			require.Equal(t, slack.InteractionTypeBlockActions, cb.Type)
			require.Equal(t, "U0APP", cb.User.ID)
			require.Equal(t, "C0OPS", cb.Channel.ID)
			require.Equal(t, "1700000000.000100", cb.Container.MessageTs)
			require.Equal(t, "http://example.invalid/r", cb.ResponseURL)
			require.Len(t, cb.ActionCallback.BlockActions, 1)
			require.Equal(t, "runbot_approve", cb.ActionCallback.BlockActions[0].ActionID)
			require.Equal(t, "plan-1|hash", cb.ActionCallback.BlockActions[0].Value)
		})
	}
}
