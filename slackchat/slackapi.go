package slackchat

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"time"

	"github.com/slack-go/slack"

	"github.com/runbot/runbot/chat"
)

// slackAPI is the part of the Slack Web API runbot uses; *slack.Client
// implements it.
type slackAPI interface {
	PostMessageContext(ctx context.Context, channelID string, options ...slack.MsgOption) (string, string, error)
	UpdateMessageContext(ctx context.Context, channelID, timestamp string, options ...slack.MsgOption) (string, string, string, error)
	PostEphemeralContext(ctx context.Context, channelID, userID string, options ...slack.MsgOption) (string, error)
	GetUserGroupMembersContext(ctx context.Context, userGroup string, options ...slack.GetUserGroupMembersOption) ([]string, error)
}

var _ slackAPI = (*slack.Client)(nil)

// slackPlatform names Slack in the message references it returns
// (chat.Ref), which the core records; a Slack message's ID is its ts.
const slackPlatform = "slack"

// maxRateLimitWaits bounds how often one call waits out a 429 before it
// gives up, and maxServerRetries how often it tries again after a server
// error or a network failure; the caller's context bounds the total time.
const (
	maxRateLimitWaits = 5
	maxServerRetries  = 3
)

// retryRateLimited calls fn until it does not fail with a rate limit, each
// time waiting the Retry-After Slack asked for (at least a second), or
// with a server error (5xx) or a network failure, waiting 1 s, 2 s, 4 s:
// a Slack hiccup that lasts a moment must not lose a reply.
func retryRateLimited(ctx context.Context, log *slog.Logger, what string, fn func(context.Context) error) error {
	limited, failed := 0, 0
	for {
		err := fn(ctx)
		var (
			rl    *slack.RateLimitedError
			wait  time.Duration
			doing = "waiting out a rate limit"
		)
		switch {
		case err == nil:
			return nil
		case errors.As(err, &rl):
			if limited >= maxRateLimitWaits {
				return err
			}
			limited++
			wait = max(rl.RetryAfter, time.Second)
			log.Warn("slack rate limit; waiting", "call", what, "retry_after", wait, "attempt", limited)
		case transient(err) && ctx.Err() == nil:
			if failed >= maxServerRetries {
				return err
			}
			wait, doing = time.Second<<failed, "waiting to try again after a failure"
			failed++
			log.Warn("slack call failed; trying again", "call", what, "err", stripURL(err), "retry_in", wait, "attempt", failed)
		default:
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%s: %s: %w", what, doing, context.Cause(ctx))
		}
	}
}

// transient reports whether a failed call may succeed when tried again: a
// server error or a network failure, not an answer that refuses it.
func transient(err error) bool {
	var sc slack.StatusCodeError
	if errors.As(err, &sc) {
		return sc.Code >= 500
	}
	var ne net.Error
	var ue *url.Error
	return errors.As(err, &ne) || errors.As(err, &ue) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

// messenger posts messages: it redacts, renders to Block Kit and retries
// rate-limited calls.
type messenger struct {
	api     slackAPI
	redact  *Redactor
	log     *slog.Logger
	metrics *slackMetrics // counts the response_url posts; api counts the rest
	// reportURL links messages about a run to its report (Config.ReportURL).
	reportURL func(runID string) string
}

func (m *messenger) options(msg chat.Message) []slack.MsgOption {
	msg = m.prepare(msg)
	return []slack.MsgOption{
		slack.MsgOptionText(fallbackText(msg), false),
		slack.MsgOptionBlocks(renderBlocks(msg)...),
	}
}

// post posts msg to a channel, in a thread when threadTS is set, and
// returns the message's ts.
func (m *messenger) post(ctx context.Context, channel, threadTS string, msg chat.Message) (string, error) {
	opts := m.options(msg)
	if threadTS != "" {
		opts = append(opts, slack.MsgOptionTS(threadTS))
	}
	var ts string
	err := retryRateLimited(ctx, m.log, "chat.postMessage", func(ctx context.Context) error {
		var err error
		_, ts, err = m.api.PostMessageContext(ctx, channel, opts...)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("post message to %s: %w", channel, err)
	}
	return ts, nil
}

// update replaces the message at channel/ts, once: the live updater does
// its own rate-limit waiting so that it can send newer content after.
func (m *messenger) update(ctx context.Context, channel, ts string, msg chat.Message) error {
	_, _, _, err := m.api.UpdateMessageContext(ctx, channel, ts, m.options(msg)...)
	if err != nil {
		return fmt.Errorf("update message %s/%s: %w", channel, ts, err)
	}
	return nil
}

// ephemeral shows msg to one user in a channel.
func (m *messenger) ephemeral(ctx context.Context, channel, user string, msg chat.Message) error {
	opts := m.options(msg)
	err := retryRateLimited(ctx, m.log, "chat.postEphemeral", func(ctx context.Context) error {
		_, err := m.api.PostEphemeralContext(ctx, channel, user, opts...)
		return err
	})
	if err != nil {
		return fmt.Errorf("post ephemeral message to %s in %s: %w", user, channel, err)
	}
	return nil
}

// respond posts msg to a slash command's or interaction's response_url,
// visible only to the user who asked.
func (m *messenger) respond(ctx context.Context, responseURL string, msg chat.Message) error {
	msg = m.prepare(msg)
	blocks := renderBlocks(msg)
	err := retryRateLimited(ctx, m.log, "response_url", func(ctx context.Context) error {
		start := time.Now()
		err := slack.PostWebhookContext(ctx, responseURL, &slack.WebhookMessage{
			Text: fallbackText(msg), Blocks: &slack.Blocks{BlockSet: blocks}, ResponseType: slack.ResponseTypeEphemeral,
		})
		if m.metrics != nil {
			m.metrics.observe("response_url", start, err)
		}
		return err
	})
	if err != nil {
		// The URL is a credential; say which call failed, not where.
		return fmt.Errorf("post to response_url: %w", stripURL(err))
	}
	return nil
}

// stripURL drops the URL from a *url.Error so that a response_url, which
// is a credential, does not end up in logs.
func stripURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}

// commandReply is the body of an immediate, ephemeral reply to a slash
// command (the HTTP response, or a Socket Mode acknowledgement's payload).
type commandReply struct {
	ResponseType string        `json:"response_type"`
	Text         string        `json:"text"`
	Blocks       []slack.Block `json:"blocks"`
}

func (m *messenger) reply(msg chat.Message) commandReply {
	msg = m.prepare(msg)
	return commandReply{ResponseType: slack.ResponseTypeEphemeral, Text: fallbackText(msg), Blocks: renderBlocks(msg)}
}
