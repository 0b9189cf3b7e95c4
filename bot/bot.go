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

	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/store"
)

// Deps are the parts the bot drives. The Remediator's Groups decide who
// may approve; pass it the same groups as Config.Groups.
type Deps struct {
	Catalog    *runbooks.Catalog
	Engine     *runbooks.Engine
	Remediator *runbooks.Remediator
	Store      store.Store
	// Logger is slog.Default() when nil.
	Logger *slog.Logger
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Timeline, when set, renders the timeline picture that is uploaded
	// into a run's thread after its diagnosis (timeline.ForSlack).
	Timeline TimelineFunc
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
	tasks    *tasks
	seen     *dedup
	// socketOptions tune the Socket Mode client (tests raise the ping
	// interval: slacktest sends no pings).
	socketOptions []socketmode.Option
}

// quickTimeout bounds what happens before a Slack request is acknowledged;
// Slack gives up after 3 seconds.
const quickTimeout = 2500 * time.Millisecond

// New checks the configuration, loads the secrets and builds the bot.
func New(cfg Config, deps Deps) (*Bot, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("slack bot config: %w", err)
	}
	if deps.Catalog == nil || deps.Engine == nil || deps.Remediator == nil || deps.Store == nil {
		return nil, errors.New("slack bot: catalog, engine, remediator and store are required")
	}
	log := deps.Logger
	if log == nil {
		log = slog.Default()
	}
	log = log.With("component", "slack")
	now := deps.Now
	if now == nil {
		now = time.Now
	}
	botToken, err := cfg.BotToken.Load()
	if err != nil {
		return nil, fmt.Errorf("slack bot token (%s): %w", cfg.BotToken, err)
	}
	b := &Bot{cfg: cfg, log: log, now: now, catalog: deps.Catalog, engine: deps.Engine, store: deps.Store}
	secrets := []Secret{botToken}
	if cfg.Transport == TransportHTTP {
		sig, err := cfg.SigningSecret.Load()
		if err != nil {
			return nil, fmt.Errorf("slack signing secret (%s): %w", cfg.SigningSecret, err)
		}
		b.verifier = verifier{secret: []byte(sig.Reveal()), now: now}
		secrets = append(secrets, sig)
	}
	opts := []slack.Option{}
	if cfg.Transport == TransportSocket {
		if b.appToken, err = cfg.AppToken.Load(); err != nil {
			return nil, fmt.Errorf("slack app token (%s): %w", cfg.AppToken, err)
		}
		opts = append(opts, slack.OptionAppLevelToken(b.appToken.Reveal()))
		secrets = append(secrets, b.appToken)
	}
	if cfg.APIURL != "" {
		opts = append(opts, slack.OptionAPIURL(cfg.APIURL))
	}
	b.api = slack.New(botToken.Reveal(), opts...)
	red, err := NewRedactor(cfg.Redact, secrets...)
	if err != nil {
		return nil, fmt.Errorf("slack bot config: %w", err)
	}
	b.tasks = newTasks(log)
	b.metrics = newSlackMetrics()
	api := meteredAPI{api: b.api, m: b.metrics}
	b.msgr = &messenger{api: api, redact: red, log: log, metrics: b.metrics}
	b.access = &access{rules: cfg.Access, groups: cfg.Groups, slack: &slackGroups{api: api, now: now, cache: map[string]groupEntry{}}}
	b.seen = newDedup(now, 30*time.Minute)
	b.disp = &Dispatcher{
		catalog: deps.Catalog, engine: deps.Engine, rem: deps.Remediator, store: deps.Store,
		recorder: &runbooks.Recorder{Engine: deps.Engine, Runs: deps.Store, Remediator: deps.Remediator},
		msgr:     b.msgr, tasks: b.tasks, log: log, now: now,
		channel: cfg.Channel, runTimeout: cfg.RunTimeout, applyTimeout: cfg.ApplyTimeout, gap: cfg.UpdateInterval,
		slots: make(chan struct{}, cfg.MaxConcurrentRuns), runs: map[string]*runState{},
		timeline: deps.Timeline, files: api,
	}
	return b, nil
}

// Describe implements prometheus.Collector: the bot's Slack API metrics.
func (b *Bot) Describe(ch chan<- *prometheus.Desc) { b.metrics.Describe(ch) }

// Collect implements prometheus.Collector.
func (b *Bot) Collect(ch chan<- prometheus.Metric) { b.metrics.Collect(ch) }

// Approvers resolves the groups Config.SlackUsergroups backs with Slack
// user groups; set it as the Remediator's Directory so that votes are
// checked against who is in the Slack group now.
func (b *Bot) Approvers() runbooks.Directory {
	return approverDirectory{ids: b.cfg.SlackUsergroups, groups: b.access.slack}
}

// Dispatcher is the core that alerts and schedules submit runs to.
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

// Shutdown stops taking new work and waits for runs, applies and message
// updates in flight; when ctx ends first it cancels them.
func (b *Bot) Shutdown(ctx context.Context) error {
	return b.tasks.Shutdown(ctx)
}
