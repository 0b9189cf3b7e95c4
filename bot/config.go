package bot

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/runbot/runbot/runbooks"
)

// Transport is how Slack reaches the bot.
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

// Config is the bot's configuration. Loading it from YAML is the caller's
// business; secrets are references (env or file), loaded by New.
type Config struct {
	Transport Transport
	// BotToken (xoxb-…) calls the Web API.
	BotToken SecretRef
	// SigningSecret verifies HTTP requests (TransportHTTP).
	SigningSecret SecretRef
	// AppToken (xapp-…, scope connections:write) opens Socket Mode.
	AppToken SecretRef

	// Command is the slash command's name; "/runbot" when empty.
	Command string
	// Channel is where runs not started from Slack (alerts, schedules)
	// post when their trigger names no channel.
	Channel string

	// Access says who may run which runbook from Slack. With no rules,
	// nobody may.
	Access []AccessRule
	// Groups are named sets of Slack user IDs, used by access rules and by
	// remediation approvers ("@sre-oncall").
	Groups runbooks.Groups
	// SlackUsergroups maps a group name to a Slack user group id (S…);
	// its members, looked up when someone votes or asks for a dry run,
	// belong to the group too. Give the Remediator Bot.Approvers().
	SlackUsergroups map[string]string

	// Redact are extra regular expressions whose matches are replaced by
	// [redacted] in everything posted; a pattern with capture groups
	// redacts only the groups.
	Redact []string

	// RunTimeout bounds one run (15m when 0); ApplyTimeout one approved
	// remediation with its verification (30m when 0).
	RunTimeout   time.Duration
	ApplyTimeout time.Duration
	// UpdateInterval is the least time between two updates of one Slack
	// message (1s when 0).
	UpdateInterval time.Duration
	// MaxConcurrentRuns bounds runs at once; more wait in the queue (8
	// when 0).
	MaxConcurrentRuns int

	// APIURL overrides Slack's Web API base URL (tests, proxies); it must
	// end with a slash.
	APIURL string
}

// AccessRule allows some people to run some runbooks, optionally only in
// some channels. A request is allowed when any rule allows it.
type AccessRule struct {
	// Runbooks are runbook names; "*" is every runbook.
	Runbooks []string
	// Users are Slack user IDs.
	Users []string
	// Groups name entries of Config.Groups.
	Groups []string
	// SlackGroups are Slack user group IDs (S…), looked up with
	// usergroups.users.list (scope usergroups:read).
	SlackGroups []string
	// Channels are channel IDs the rule applies in; empty is any channel.
	Channels []string
}

func (c Config) withDefaults() Config {
	if c.Transport == "" {
		c.Transport = TransportHTTP
	}
	if c.Command == "" {
		c.Command = "/runbot"
	}
	if c.RunTimeout <= 0 {
		c.RunTimeout = 15 * time.Minute
	}
	if c.ApplyTimeout <= 0 {
		c.ApplyTimeout = 30 * time.Minute
	}
	if c.UpdateInterval <= 0 {
		c.UpdateInterval = time.Second
	}
	if c.MaxConcurrentRuns <= 0 {
		c.MaxConcurrentRuns = 8
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
	if !strings.HasPrefix(c.Command, "/") {
		errs = append(errs, fmt.Errorf("command %q must start with /", c.Command))
	}
	for i, r := range c.Access {
		if len(r.Runbooks) == 0 {
			errs = append(errs, fmt.Errorf("access rule %d: runbooks is required (names or \"*\")", i+1))
		}
		if len(r.Users)+len(r.Groups)+len(r.SlackGroups) == 0 {
			errs = append(errs, fmt.Errorf("access rule %d: name users, groups or slack_groups", i+1))
		}
		for _, g := range r.Groups {
			if _, ok := c.Groups[g]; !ok {
				errs = append(errs, fmt.Errorf("access rule %d: unknown group %q", i+1, g))
			}
		}
	}
	return errors.Join(errs...)
}
