package slackchat

import (
	"context"
	"errors"
	"strings"

	"github.com/slack-go/slack"

	"github.com/runbot/runbot/chat"
)

// slackUnescape undoes the HTML escaping Slack applies to &, < and > in
// command text, so that the handler reads what the person typed.
var slackUnescape = strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&")

// commandOf is a slash command as the chat seam carries it.
func commandOf(sc slack.SlashCommand) chat.Command {
	return chat.Command{
		ID: sc.TriggerID, User: sc.UserID, Channel: sc.ChannelID,
		Text: slackUnescape.Replace(sc.Text), ReplyTo: sc.ResponseURL,
	}
}

// command answers a slash command through the handler, within Slack's 3
// seconds.
func (b *Receiver) command(ctx context.Context, sc slack.SlashCommand) chat.Message {
	ctx, cancel := context.WithTimeoutCause(ctx, quickTimeout, errors.New("the command took longer than Slack waits for its answer"))
	defer cancel()
	return b.handler.Command(ctx, commandOf(sc))
}

// interaction hands each button press of a block_actions payload to the
// handler before the click is acknowledged, within Slack's 3 seconds: the
// handler records what must not be lost (a vote) and returns. A
// redelivered click (same action_ts) is handed on once.
func (b *Receiver) interaction(ctx context.Context, cb slack.InteractionCallback) {
	ctx, cancel := context.WithTimeoutCause(ctx, quickTimeout, errors.New("the click took longer than Slack waits for its acknowledgement"))
	defer cancel()
	if cb.Type != slack.InteractionTypeBlockActions {
		b.log.Debug("interaction ignored", "type", cb.Type)
		return
	}
	channel := cb.Container.ChannelID
	if channel == "" {
		channel = cb.Channel.ID
	}
	ts := cb.Container.MessageTs
	if ts == "" {
		ts = cb.Message.Timestamp
	}
	for _, a := range cb.ActionCallback.BlockActions {
		if a.ActionTs != "" && !b.seen.first(cb.User.ID+"/"+a.ActionID+"/"+a.ActionTs) {
			b.log.Info("repeated click ignored", "user", cb.User.ID, "action", a.ActionID, "action_ts", a.ActionTs)
			continue
		}
		b.handler.Click(ctx, chat.Click{
			User: cb.User.ID, Channel: channel, Message: chat.Ref{Platform: slackPlatform, Channel: channel, ID: ts},
			Action: a.ActionID, Value: a.Value, ReplyTo: cb.ResponseURL,
		})
	}
}
