package slackchat

import (
	"context"
	"fmt"

	"github.com/slack-go/slack"

	"github.com/runbot/runbot/chat"
)

// PostPreview posts a preview message to a real Slack channel with the
// given bot token: the demo's optional last mile. apiURL overrides Slack's
// Web API URL (a proxy, or a test server) when not empty.
func PostPreview(ctx context.Context, token, channel, apiURL string, m chat.Message) (string, error) {
	var opts []slack.Option
	if apiURL != "" {
		opts = append(opts, slack.OptionAPIURL(apiURL))
	}
	api := slack.New(token, opts...)
	_, ts, err := api.PostMessageContext(ctx, channel, slack.MsgOptionText(fallbackText(m), false), slack.MsgOptionBlocks(renderBlocks(m)...))
	if err != nil {
		return "", fmt.Errorf("post to slack channel %s: %w", channel, err)
	}
	return ts, nil
}
