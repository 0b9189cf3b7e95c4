package bot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"

	"github.com/runbot/runbot/dispatch"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/store"
)

// Deps are the parts the Slack front drives besides the Dispatcher: the
// catalog and engine for list and explain, the store for status and
// history.
type Deps struct {
	Catalog *runbooks.Catalog
	Engine  *runbooks.Engine
	Store   store.Store
}

// Slack is the Slack platform built from the config: the Web API client,
// the credentials, the redactor and the API metrics. It implements
// chat.Chat (Block Kit, redacted): hand it to the Dispatcher, and both to
// New for the slash command and the buttons.
type Slack struct {
	*slackChat
	cfg      Config
	log      *slog.Logger
	now      func() time.Time
	api      *slack.Client
	metrics  *slackMetrics
	verifier verifier
	appToken Secret
	redactor *Redactor
	groups   *slackGroups
}

// NewSlack checks the configuration and loads the secrets. Logger is
// slog.Default() and now time.Now when nil.
func NewSlack(cfg Config, log *slog.Logger, now func() time.Time) (*Slack, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("slack bot config: %w", err)
	}
	if log == nil {
		log = slog.Default()
	}
	log = log.With("component", "slack")
	if now == nil {
		now = time.Now
	}
	botToken, err := cfg.BotToken.Load()
	if err != nil {
		return nil, fmt.Errorf("slack bot token (%s): %w", cfg.BotToken, err)
	}
	s := &Slack{cfg: cfg, log: log, now: now}
	secrets := []Secret{botToken}
	if cfg.Transport == TransportHTTP {
		sig, err := cfg.SigningSecret.Load()
		if err != nil {
			return nil, fmt.Errorf("slack signing secret (%s): %w", cfg.SigningSecret, err)
		}
		s.verifier = verifier{secret: []byte(sig.Reveal()), now: now}
		secrets = append(secrets, sig)
	}
	opts := []slack.Option{}
	if cfg.Transport == TransportSocket {
		if s.appToken, err = cfg.AppToken.Load(); err != nil {
			return nil, fmt.Errorf("slack app token (%s): %w", cfg.AppToken, err)
		}
		opts = append(opts, slack.OptionAppLevelToken(s.appToken.Reveal()))
		secrets = append(secrets, s.appToken)
	}
	if cfg.APIURL != "" {
		opts = append(opts, slack.OptionAPIURL(cfg.APIURL))
	}
	s.api = slack.New(botToken.Reveal(), opts...)
	if s.redactor, err = NewRedactor(cfg.Redact, secrets...); err != nil {
		return nil, fmt.Errorf("slack bot config: %w", err)
	}
	s.metrics = newSlackMetrics()
	api := meteredAPI{api: s.api, m: s.metrics}
	msgr := &messenger{api: api, redact: s.redactor, log: log, metrics: s.metrics}
	s.slackChat = &slackChat{msgr: msgr, files: api, log: log}
	s.groups = &slackGroups{api: api, now: now, cache: map[string]groupEntry{}}
	return s, nil
}

// dispatch.Config is the part of the Slack config that tunes the
// Dispatcher: the default channel, concurrency, timeouts, update pace.
func (s *Slack) DispatcherConfig() dispatch.Config {
	return dispatch.Config{
		Channel: s.cfg.Channel, MaxConcurrentRuns: s.cfg.MaxConcurrentRuns,
		RunTimeout: s.cfg.RunTimeout, ApplyTimeout: s.cfg.ApplyTimeout, UpdateInterval: s.cfg.UpdateInterval,
	}
}

// RedactReport is the redaction of every Slack message applied to a
// report, for what is drawn from it (the timeline picture).
func (s *Slack) RedactReport(rep *runbooks.Report) (*runbooks.Report, error) {
	return redactReport(rep, s.redactor)
}

// Describe implements prometheus.Collector: the bot's Slack API metrics.
func (b *Bot) Describe(ch chan<- *prometheus.Desc) { b.metrics.Describe(ch) }

// Collect implements prometheus.Collector.
func (b *Bot) Collect(ch chan<- prometheus.Metric) { b.metrics.Collect(ch) }

// Approvers resolves the groups Config.SlackUsergroups backs with Slack
// user groups; set it as the Remediator's Directory so that votes are
// checked against who is in the Slack group now.
func (s *Slack) Approvers() runbooks.Directory {
	return approverDirectory{ids: s.cfg.SlackUsergroups, groups: s.groups}
}

// Bot is runbot in Slack: the slash command, the run messages and the
// approval buttons, over HTTP or Socket Mode.
type Bot struct {
	cfg      Config
	log      *slog.Logger
	now      func() time.Time
	api      *slack.Client
	msgr     *messenger
	metrics  *slackMetrics
	verifier verifier
	appToken Secret
	access   *access
	catalog  *runbooks.Catalog
	engine   *runbooks.Engine
	store    store.Store
	disp     *Dispatcher
	slack    *Slack
	seen     *dedup
	// socketOptions tune the Socket Mode client (tests raise the ping
	// interval: slacktest sends no pings).
	socketOptions []socketmode.Option
}

// quickTimeout bounds what happens before a Slack request is acknowledged;
// Slack gives up after 3 seconds.
const quickTimeout = 2500 * time.Millisecond

// New builds the Slack front on the Slack platform s and the Dispatcher
// d, which is built first (NewDispatcher, with s as its chat) and is
// shared with the other triggers.
func New(s *Slack, d *Dispatcher, deps Deps) (*Bot, error) {
	if s == nil || d == nil {
		return nil, errors.New("slack bot: the slack platform and a dispatcher are required")
	}
	if deps.Catalog == nil || deps.Engine == nil || deps.Store == nil {
		return nil, errors.New("slack bot: catalog, engine and store are required")
	}
	b := &Bot{
		cfg: s.cfg, log: s.log, now: s.now, api: s.api, msgr: s.msgr, metrics: s.metrics,
		verifier: s.verifier, appToken: s.appToken, catalog: deps.Catalog, engine: deps.Engine, store: deps.Store, disp: d,
		slack:  s,
		access: &access{rules: s.cfg.Access, groups: s.cfg.Groups, slack: s.groups},
		seen:   newDedup(s.now, 30*time.Minute),
	}
	return b, nil
}

// Approvers is the Slack platform's (Slack.Approvers).
func (b *Bot) Approvers() runbooks.Directory { return b.slack.Approvers() }

// Dispatcher is the core the bot submits runs to.
func (b *Bot) Dispatcher() *Dispatcher { return b.disp }

// Handler serves Slack's HTTP requests: POST /slack/commands (slash
// commands) and POST /slack/interactions (buttons). Every request must be
// signed with the signing secret; anything else gets 401. Mount it at the
// server's root or under a prefix with http.StripPrefix.
func (b *Bot) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("POST /slack/commands", b.verified(http.HandlerFunc(b.serveCommand)))
	mux.Handle("POST /slack/interactions", b.verified(http.HandlerFunc(b.serveInteraction)))
	return mux
}

// Run starts the workers for work queued before a restart and, with the
// Socket Mode transport, holds the WebSocket to Slack until ctx ends. With
// the HTTP transport it waits for ctx; serve Handler meanwhile.
func (b *Bot) Run(ctx context.Context) error {
	if err := b.disp.Resume(ctx); err != nil {
		return fmt.Errorf("resume queued work: %w", err)
	}
	if b.cfg.Transport == TransportSocket {
		return b.runSocketMode(ctx)
	}
	<-ctx.Done()
	return nil
}

// Shutdown stops the dispatcher's work (Dispatcher.Shutdown).
func (b *Bot) Shutdown(ctx context.Context) error {
	return b.disp.Shutdown(ctx)
}
