package slackchat

import (
	"bytes"
	"context"
	"errors"
	"log/slog"

	"github.com/slack-go/slack"

	"github.com/runbot/runbot/chat"
)

// fileUploader is the part of the Slack API the timeline upload uses:
// slack-go's three-step upload (files.getUploadURLExternal, a POST of the
// bytes, files.completeUploadExternal). *slack.Client implements it.
type fileUploader interface {
	UploadFileContext(ctx context.Context, params slack.UploadFileParameters) (*slack.FileSummary, error)
}

var _ fileUploader = (*slack.Client)(nil)

// outgoing is Slack as a chat.Chat: messages rendered as Block Kit and
// redacted by the messenger, files uploaded with slack-go's three-step
// upload.
type outgoing struct {
	msgr  *messenger
	files fileUploader
	log   *slog.Logger
}

var _ chat.Chat = (*outgoing)(nil)

// Post implements chat.Chat; a Slack message's ID is its ts.
func (c *outgoing) Post(ctx context.Context, channel, thread string, m chat.Message) (chat.Ref, error) {
	ts, err := c.msgr.post(ctx, channel, thread, m)
	if err != nil {
		return chat.Ref{}, chatError(err)
	}
	return chat.Ref{Platform: slackPlatform, Channel: channel, ID: ts}, nil
}

// Update implements chat.Chat, once: a 429 comes back as a
// *chat.RateLimitedError for the caller to wait out.
func (c *outgoing) Update(ctx context.Context, ref chat.Ref, m chat.Message) error {
	return chatError(c.msgr.update(ctx, ref.Channel, ref.ID, m))
}

// refusals are the errors with which Slack refuses a post or an update for
// good: the same call cannot succeed later. Errors of the token
// (invalid_auth, token_revoked) are not among them: the message waits for
// an operator to fix the token rather than being lost.
var refusals = map[string]bool{
	"channel_not_found": true, "not_in_channel": true, "is_archived": true, "msg_too_long": true,
	"no_text": true, "invalid_blocks": true, "invalid_blocks_format": true, "too_many_attachments": true,
	"message_not_found": true, "cant_update_message": true, "edit_window_closed": true,
	"restricted_action": true, "restricted_action_read_only_channel": true, "restricted_action_thread_only_channel": true,
	"invalid_arguments": true, "invalid_ts_latest": true, "invalid_thread_ts": true, "thread_not_found": true,
}

// chatError says in the chat seam's terms what kind of failure a Slack
// call's error is: a rate limit to wait out, a refusal for good, or
// anything else (a 5xx, a network failure), which is worth trying again.
func chatError(err error) error {
	if err == nil {
		return nil
	}
	var rl *slack.RateLimitedError
	if errors.As(err, &rl) {
		return &chat.RateLimitedError{RetryAfter: rl.RetryAfter, Err: err}
	}
	var se slack.SlackErrorResponse
	if errors.As(err, &se) && refusals[se.Err] {
		return &chat.RejectedError{Reason: se.Err, Err: err}
	}
	return err
}

// Upload implements chat.Chat.
func (c *outgoing) Upload(ctx context.Context, channel, thread string, f chat.File) error {
	if c.files == nil {
		return errors.New("slack file upload is not configured")
	}
	params := slack.UploadFileParameters{
		Filename: f.Name, FileSize: len(f.Data), Title: f.Title, AltTxt: f.AltText,
		Channel: channel, ThreadTimestamp: thread,
	}
	err := retryRateLimited(ctx, c.log, "file upload", func(ctx context.Context) error {
		// Each try uploads afresh: an upload URL is good for one upload.
		params.Reader = bytes.NewReader(f.Data)
		_, err := c.files.UploadFileContext(ctx, params)
		return err
	})
	if err != nil {
		// An upload URL is pre-signed: keep it out of logs and Slack.
		return stripURL(err)
	}
	return nil
}

var _ chat.Replier = (*outgoing)(nil)

// Reply implements chat.Replier: an ephemeral message in the channel the
// person acted in, or, when that fails or there is no channel, a post to
// the response_url their command or click carried (to.ReplyTo).
func (c *outgoing) Reply(ctx context.Context, to chat.Recipient, m chat.Message) error {
	var errs []error
	if to.User != "" && to.Channel != "" {
		err := c.msgr.ephemeral(ctx, to.Channel, to.User, m)
		if err == nil {
			return nil
		}
		errs = append(errs, err)
		if to.ReplyTo != "" {
			c.log.Warn("ephemeral message failed; trying response_url", "user", to.User, "err", err)
		}
	}
	if to.ReplyTo != "" {
		err := c.msgr.respond(ctx, to.ReplyTo, m)
		if err == nil {
			return nil
		}
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return errors.New("reply: no channel and user, and no response_url, to reply to")
	}
	return errors.Join(errs...)
}
