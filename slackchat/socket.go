package slackchat

import (
	"context"
	"errors"
	"fmt"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"
)

// acker acknowledges Socket Mode requests; *socketmode.Client is one.
type acker interface {
	Ack(req socketmode.Request, payload ...any) error
}

// runSocketMode holds the Socket Mode connection (slack-go reconnects it)
// and handles its events until ctx ends.
func (b *Receiver) runSocketMode(ctx context.Context) error {
	client := socketmode.New(b.api, b.socketOptions...)
	errc := make(chan error, 1)
	go func() { errc <- client.RunContext(ctx) }()
	for {
		select {
		case <-ctx.Done():
			if err := <-errc; err != nil && !errors.Is(err, context.Canceled) {
				b.log.Warn("slack socket mode stopped", "err", stripURL(err))
			}
			return nil
		case err := <-errc:
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("slack socket mode: %w", err)
		case evt := <-client.Events:
			if err := b.socketEvent(ctx, client, evt); err != nil {
				return err
			}
		}
	}
}

// errInvalidAuth stops Socket Mode: retrying a rejected token is useless.
var errInvalidAuth = errors.New("slack socket mode: the app-level token was rejected (invalid_auth)")

// socketEvent handles one Socket Mode event with the same handlers as the
// HTTP transport. A slash command is acknowledged with its reply as the
// payload, and a click once its vote is recorded; runs and applies happen
// after.
func (b *Receiver) socketEvent(ctx context.Context, ack acker, evt socketmode.Event) error {
	switch evt.Type {
	case socketmode.EventTypeSlashCommand:
		sc, ok := evt.Data.(slack.SlashCommand)
		if !ok || evt.Request == nil {
			return nil
		}
		if evt.Request.RetryAttempt > 0 {
			b.log.Info("slack redelivered a command", "retry", evt.Request.RetryAttempt, "reason", evt.Request.RetryReason)
		}
		b.log.Info("slash command", "user", sc.UserID, "channel", sc.ChannelID, "command", sc.Command, "transport", "socket")
		reply := b.msgr.reply(b.command(ctx, sc))
		if err := ack.Ack(*evt.Request, reply); err != nil {
			b.log.Warn("socket mode ack failed", "err", err)
		}
	case socketmode.EventTypeInteractive:
		if evt.Request == nil {
			return nil
		}
		// The click is handled (its vote recorded) before it is
		// acknowledged, as over HTTP.
		if cb, ok := evt.Data.(slack.InteractionCallback); ok {
			b.interaction(ctx, cb)
		}
		if err := ack.Ack(*evt.Request); err != nil {
			b.log.Warn("socket mode ack failed", "err", err)
		}
	case socketmode.EventTypeEventsAPI:
		// The app subscribes to no events; acknowledge anything Slack sends.
		if evt.Request != nil {
			_ = ack.Ack(*evt.Request)
		}
	case socketmode.EventTypeConnecting, socketmode.EventTypeConnected, socketmode.EventTypeHello:
		b.log.Info("slack socket mode", "state", evt.Type)
	case socketmode.EventTypeDisconnect:
		b.log.Info("slack socket mode disconnect; reconnecting")
	case socketmode.EventTypeInvalidAuth:
		return errInvalidAuth
	case socketmode.EventTypeConnectionError, socketmode.EventTypeIncomingError, socketmode.EventTypeErrorBadMessage, socketmode.EventTypeErrorWriteFailed:
		detail := "-"
		if err, ok := evt.Data.(error); ok {
			// A connection error may carry the WebSocket URL and its ticket.
			detail = stripURL(err).Error()
		}
		b.log.Warn("slack socket mode problem", "type", evt.Type, "detail", detail)
	}
	return nil
}
