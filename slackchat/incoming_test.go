package slackchat

import (
	"testing"

	"github.com/slack-go/slack"
	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/chat"
)

// Slack escapes &, < and > in a slash command's text; the command reaches
// the handler as it was typed, with everything else of the delivery.
func TestSlashCommandReachesTheHandlerAsTyped(t *testing.T) {
	t.Parallel()
	got := commandOf(slack.SlashCommand{
		TriggerID: "1.1.trigger", UserID: "U0REQ", ChannelID: "C0OPS",
		Text: `explain x note="cmp &lt;b&gt; &amp;amp; &amp;"`, ResponseURL: "https://hooks.slack.com/commands/T0/1/x",
	})
	require.Equal(t, chat.Command{
		ID: "1.1.trigger", User: "U0REQ", Channel: "C0OPS",
		Text: `explain x note="cmp <b> &amp; &"`, ReplyTo: "https://hooks.slack.com/commands/T0/1/x",
	}, got)
}
