// Package config loads `runbot serve`'s configuration file: one YAML file
// wiring Slack, the alert webhook, schedules, inventory, runbooks, approval
// groups and the store. Like runbooks, it is decoded through YAML nodes so
// every problem is reported as file:line:col, all in one pass. Secrets are
// only ever references (env: or file:), never values.
package config

import (
	"time"

	"github.com/runbot/runbot/internal/secret"
)

// Secret is a reference to a secret: an environment variable or a file,
// never the value.
type Secret = secret.Ref

// Config is a validated serve configuration.
type Config struct {
	File   string
	Listen string
	TLS    *TLS
	// Store is where runbot keeps its state, as written: a SQLite file
	// (a path, or sqlite:///path) or a PostgreSQL URL without a
	// password. Empty when StoreDSN is set.
	Store string
	// StoreDSN refers to a PostgreSQL DSN that holds a password: the DSN
	// is a secret, loaded by StoreLocation, never kept here.
	StoreDSN  Secret
	Inventory string
	Runbooks  []string
	Log       Log
	// Groups are approver and user groups: name -> member ids.
	Groups map[string][]string
	// Operators maps the OS users of runbot's host to the identities
	// approval policies name (Operator): runbot approve and runbot deny
	// vote as the identity the OS user running them maps to, never as one
	// they are told on the command line; the report pages map the user
	// web.trust_header names the same way.
	Operators map[string]string
	// SlackUsergroups maps a group name to a Slack user group id (S…)
	// whose members also belong to the group.
	SlackUsergroups map[string]string
	Slack           *Slack
	Alerts          *Alerts
	Schedules       []Schedule
	// Web, when set, serves the incident report pages and puts a Full
	// report link in chat messages about runs.
	Web *Web
	// ShutdownGrace is how long in-flight steps may finish on SIGTERM.
	ShutdownGrace time.Duration
	// Parallel bounds runs executing at once.
	Parallel int
	// SSHIdleTimeout closes a host's SSH connection once no run has used
	// it for that long, so that serve does not keep a login (sshd, an
	// sftp-server, a bus forwarding) on every host it ever ran on; the
	// next run dials again. Zero keeps connections for good.
	SSHIdleTimeout time.Duration
	// At is where each top-level key's value was written.
	At Positions
}

// TLS is an optional certificate for the listener.
type TLS struct{ Cert, Key string }

// Log configures structured logging.
type Log struct {
	Format string // json or text
	Level  string // debug, info, warn, error
}

// Slack configures the Slack front door.
type Slack struct {
	Mode          string // http or socket
	BotToken      Secret
	SigningSecret Secret
	AppToken      Secret
	Channel       string
	Command       string
	Authorize     []Rule
	Redact        []string
	APIURL        string // for tests against slacktest
	// At is where each key of the slack section was written.
	At Positions
}

// Rule says who may run which runbooks from Slack.
type Rule struct {
	Runbooks []string // "*" for all
	Users    []string
	Groups   []string
	Channels []string
	At       Positions
}

// Alerts configures the Alertmanager webhook.
type Alerts struct {
	BearerToken Secret
	BasicUser   string
	BasicPass   Secret
	DedupWindow time.Duration
	MaxQueue    int
	MaxBody     int64
	Channel     string
	// Messages is "group" (one summary per Alertmanager group, the
	// default when empty) or "alert" (one message per alert).
	Messages string
	// Generic, when set, enables POST /alerts/generic: where in a JSON
	// body from any other source the alerts and their fields are.
	Generic *GenericAlerts
	Routes  []Route
	// At is where each key of the alerts section was written
	// (basic_auth's as basic_auth.user and basic_auth.password).
	At Positions
}

// Route maps alerts to a runbook.
type Route struct {
	Match   map[string]string
	Runbook string
	Params  map[string]string // templates over .labels and .annotations
	At      Positions
}

// Schedule runs a runbook on a cron schedule.
type Schedule struct {
	Runbook  string
	Cron     string
	TimeZone string
	Params   map[string]string
	// Post is always, on_change or on_failure.
	Post    string
	Channel string
	// Deployments, when set, makes the schedule a fleet audit: "all" or a
	// glob of inventory deployment names, each audited with the
	// runbook's deployment param set to it (so params must not set it).
	// Parallel is how many run at once (4 unless set); whether the glob
	// matches anything is checked against the inventory when serve
	// starts, which config does not read.
	Deployments string
	Parallel    int
	At          Positions
}

// DefaultScheduleParallel is how many deployments of a fleet audit run at
// once unless a schedule says otherwise: runbot run --parallel's default.
const DefaultScheduleParallel = 4

// GenericAlerts maps a JSON alert body to alerts: each field is a path
// (a.b.0.c) in the body, or within one alert when Alerts is set.
type GenericAlerts struct {
	Alerts, Alertname, Fingerprint, Status string
	ResolvedValues                         []string
	Labels, Annotations                    map[string]string
	LabelsFrom, AnnotationsFrom            string
	StartsAt                               string
}
