package slackchat

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/slack-go/slack"
)

// Slack is the Slack platform built from the config: the Web API client,
// the credentials, the redactor and the API metrics. It implements
// chat.Chat, chat.Replier and chat.UserGroups (Block Kit, redacted): hand
// it to the dispatcher and the triggers, and to NewReceiver, with the
// chat.Handler that answers commands and clicks, for what Slack sends.
type Slack struct {
	*outgoing
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

// New checks the configuration and loads the secrets. Logger is
// slog.Default() and now time.Now when nil.
func New(cfg Config, log *slog.Logger, now func() time.Time) (*Slack, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("slack config: %w", err)
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
	base := cfg.Redactor
	if base == nil {
		if base, err = NewRedactor(cfg.Redact); err != nil {
			return nil, fmt.Errorf("slack config: %w", err)
		}
	}
	if s.redactor, err = base.With(nil, secrets...); err != nil {
		return nil, fmt.Errorf("slack config: %w", err)
	}
	s.metrics = newSlackMetrics()
	api := meteredAPI{api: s.api, m: s.metrics}
	msgr := &messenger{api: api, redact: s.redactor, log: log, metrics: s.metrics, reportURL: cfg.ReportURL}
	s.outgoing = &outgoing{msgr: msgr, files: api, log: log}
	s.groups = &slackGroups{api: api, now: now, cache: map[string]groupEntry{}}
	return s, nil
}

// Redactor is the redaction of every Slack message, the bot's own
// secrets included, for other places that show runs to people (the web
// report pages, the timeline pictures posted to Slack).
func (s *Slack) Redactor() *Redactor { return s.redactor }

// Describe implements prometheus.Collector: the Slack API metrics.
func (s *Slack) Describe(ch chan<- *prometheus.Desc) { s.metrics.Describe(ch) }

// Collect implements prometheus.Collector.
func (s *Slack) Collect(ch chan<- prometheus.Metric) { s.metrics.Collect(ch) }

// Approvers resolves the groups Config.SlackUsergroups backs with Slack
// user groups; set it as the Remediator's Directory so that votes are
// checked against who is in the Slack group now.
func (s *Slack) Approvers() ApproverDirectory {
	return ApproverDirectory{ids: s.cfg.SlackUsergroups, groups: s.groups}
}
