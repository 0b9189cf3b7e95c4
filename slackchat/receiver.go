package slackchat

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"

	"github.com/runbot/runbot/chat"
)

// Receiver receives what Slack sends, over HTTP or Socket Mode: it verifies
// it, parses slash commands and button clicks into chat.Command and
// chat.Click for its handler, and answers in Block Kit.
type Receiver struct {
	cfg      Config
	log      *slog.Logger
	api      *slack.Client
	msgr     *messenger
	verifier verifier
	handler  chat.Handler
	seen     *dedup
	// socketOptions tune the Socket Mode client (tests raise the ping
	// interval: slacktest sends no pings).
	socketOptions []socketmode.Option
}

// quickTimeout bounds what happens before a Slack request is acknowledged;
// Slack gives up after 3 seconds.
const quickTimeout = 2500 * time.Millisecond

// NewReceiver builds the receiving side of the Slack platform s, handing
// commands and clicks to h.
func NewReceiver(s *Slack, h chat.Handler) (*Receiver, error) {
	if s == nil || h == nil {
		return nil, errors.New("slack receiver: the slack platform and a handler are required")
	}
	return &Receiver{
		cfg: s.cfg, log: s.log, api: s.api, msgr: s.msgr, verifier: s.verifier, handler: h,
		seen: newDedup(s.now, 30*time.Minute),
	}, nil
}

// Handler serves Slack's HTTP requests: POST /slack/commands (slash
// commands) and POST /slack/interactions (buttons). Every request must be
// signed with the signing secret; anything else gets 401. Mount it at the
// server's root or under a prefix with http.StripPrefix.
func (b *Receiver) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("POST /slack/commands", b.verified(http.HandlerFunc(b.serveCommand)))
	mux.Handle("POST /slack/interactions", b.verified(http.HandlerFunc(b.serveInteraction)))
	return mux
}

// Run holds the WebSocket to Slack until ctx ends, with the Socket Mode
// transport. With the HTTP transport it waits for ctx; serve Handler
// meanwhile.
func (b *Receiver) Run(ctx context.Context) error {
	if b.cfg.Transport == TransportSocket {
		return b.runSocketMode(ctx)
	}
	<-ctx.Done()
	return nil
}
