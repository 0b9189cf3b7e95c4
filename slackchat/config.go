package slackchat

import (
	"errors"
	"fmt"
)

// Transport is how Slack reaches runbot.
type Transport string

const (
	// TransportHTTP: Slack POSTs signed requests to /slack/commands and
	// /slack/interactions; the bot needs a public URL and the signing
	// secret.
	TransportHTTP Transport = "http"
	// TransportSocket: the bot opens a WebSocket to Slack with an
	// app-level token (xapp-…); no public URL is needed.
	TransportSocket Transport = "socket"
)

// Config is the Slack platform's configuration. Loading it from YAML is
// the caller's business; secrets are references (env or file), loaded by
// New.
type Config struct {
	Transport Transport
	// BotToken (xoxb-…) calls the Web API.
	BotToken SecretRef
	// SigningSecret verifies HTTP requests (TransportHTTP).
	SigningSecret SecretRef
	// AppToken (xapp-…, scope connections:write) opens Socket Mode.
	AppToken SecretRef

	// SlackUsergroups maps a runbot group name to a Slack user group id
	// (S…); its members, looked up when someone votes or asks for a dry
	// run, belong to the group too. Give the Remediator Slack.Approvers().
	SlackUsergroups map[string]string

	// Redactor, when set, is the one redaction of everything runbot
	// shows (serve builds it from every secret its config names and
	// slack.redact): Slack applies it, with the bot's own tokens, to
	// everything posted. When nil, Slack builds its own from the default
	// patterns, Redact and its tokens.
	Redactor *Redactor

	// Redact are extra regular expressions whose matches are replaced by
	// [redacted] in everything posted, when Redactor is nil; a pattern
	// with capture groups redacts only the groups.
	Redact []string

	// APIURL overrides Slack's Web API base URL (tests, proxies); it must
	// end with a slash.
	APIURL string

	// ReportURL, when set, gives the address of a run's report page (a
	// signed link, web.Site.RunURL): every message about a run links to
	// it as "Full report". An empty address adds no link.
	ReportURL func(runID string) string
}

func (c Config) withDefaults() Config {
	if c.Transport == "" {
		c.Transport = TransportHTTP
	}
	return c
}

func (c Config) validate() error {
	var errs []error
	switch c.Transport {
	case TransportHTTP:
		if c.SigningSecret.IsZero() {
			errs = append(errs, errors.New("http transport needs signing_secret (env or file)"))
		}
	case TransportSocket:
		if c.AppToken.IsZero() {
			errs = append(errs, errors.New("socket transport needs app_token (an xapp- token, env or file)"))
		}
	default:
		errs = append(errs, fmt.Errorf("transport %q: want http or socket", c.Transport))
	}
	if c.BotToken.IsZero() {
		errs = append(errs, errors.New("bot_token (an xoxb- token, env or file) is required"))
	}
	return errors.Join(errs...)
}
