package config

import (
	"fmt"
	"maps"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/runbot/runbot/internal/cronspec"
	"github.com/runbot/runbot/internal/yamlnode"
)

// Load reads and validates a config file.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	return Parse(path, data)
}

// Parse validates config YAML.
func Parse(path string, data []byte) (*Config, error) {
	c, problems := decode(path, data)
	if err := problems.Err(); err != nil {
		return nil, err
	}
	return c, nil
}

// Check reads a config file and returns what of it decoded along with
// every problem, so that a checker can go on to what the config names
// (runbooks, deployments) and report all of it in one pass. The config is
// nil only when the file is not YAML at all; with errors among the
// problems it must not be served. err is for a file that cannot be read.
func Check(path string) (*Config, yamlnode.Problems, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read config: %w", err)
	}
	c, problems := decode(path, data)
	return c, problems, nil
}

// DefaultSSHIdleTimeout is how long serve keeps a host's SSH connection
// that no run uses: long enough that a burst of runs, or a schedule every
// few minutes, reuses it, short enough that idle hosts do not each hold a
// login for good.
const DefaultSSHIdleTimeout = 5 * time.Minute

// decode reads the config; relative paths in it are resolved against the
// directory of path (Resolve).
func decode(path string, data []byte) (*Config, yamlnode.Problems) {
	d := &yamlnode.Decoder{File: path}
	c := &Config{File: path, Listen: "127.0.0.1:8080", Log: Log{Format: "text", Level: "info"}, ShutdownGrace: 30 * time.Second, Parallel: 4, SSHIdleTimeout: DefaultSSHIdleTimeout, Groups: map[string][]string{}, SlackUsergroups: map[string]string{}, At: Positions{}}
	root := d.Parse(data)
	if root == nil {
		return nil, d.Problems
	}
	d.Fields(root, "config", []string{"listen", "tls", "store", "inventory", "runbooks", "log", "groups", "slack", "alerts", "schedules", "shutdown_grace", "parallel", "ssh_idle_timeout", "web", "operators"}, func(key string, _, v *yaml.Node) {
		c.At[key] = yamlnode.PosOf(v)
		switch key {
		case "listen":
			c.Listen = d.String(v, "listen")
			if err := CheckAddress(c.Listen); err != nil {
				d.Errorf(v, "listen must be host:port with a port from 1 to 65535 or a TCP service name, got %q: %v", c.Listen, err)
			}
		case "tls":
			c.TLS = &TLS{}
			d.Fields(v, "tls", []string{"cert", "key"}, func(key string, _, v *yaml.Node) {
				c.At["tls."+key] = yamlnode.PosOf(v)
				if key == "cert" {
					c.TLS.Cert = Resolve(path, d.String(v, "tls.cert"))
				} else {
					c.TLS.Key = Resolve(path, d.String(v, "tls.key"))
				}
			})
			if c.TLS.Cert == "" || c.TLS.Key == "" {
				d.Errorf(v, "tls needs cert and key")
			}
		case "store":
			c.Store, c.StoreDSN = decodeStore(d, v)
			c.Store = resolveStore(path, c.Store)
		case "inventory":
			c.Inventory = Resolve(path, d.String(v, "inventory"))
		case "runbooks":
			c.Runbooks = d.Strings(v, "runbooks")
			for i, dir := range c.Runbooks {
				c.Runbooks[i] = Resolve(path, dir)
			}
		case "log":
			d.Fields(v, "log", []string{"format", "level"}, func(key string, _, v *yaml.Node) {
				s := d.String(v, "log."+key)
				if key == "format" {
					c.Log.Format = s
					if s != "json" && s != "text" {
						d.Errorf(v, "log.format must be json or text, got %q", s)
					}
				} else {
					c.Log.Level = s
					if !slices.Contains([]string{"debug", "info", "warn", "error"}, s) {
						d.Errorf(v, "log.level must be debug, info, warn or error, got %q", s)
					}
				}
			})
		case "groups":
			d.Pairs(v, "groups", func(name string, _, gv *yaml.Node) { decodeGroup(d, c, name, gv) })
		case "slack":
			c.Slack = decodeSlack(d, v)
		case "alerts":
			c.Alerts = decodeAlerts(d, v)
		case "schedules":
			d.Items(v, "schedules", func(_ int, sv *yaml.Node) { c.Schedules = append(c.Schedules, decodeSchedule(d, sv)) })
		case "shutdown_grace":
			c.ShutdownGrace = d.Duration(v, "shutdown_grace")
		case "ssh_idle_timeout":
			c.SSHIdleTimeout = d.Duration(v, "ssh_idle_timeout")
			if c.SSHIdleTimeout < 0 {
				d.Errorf(v, "ssh_idle_timeout must be 0 (keep connections) or positive, got %s", c.SSHIdleTimeout)
			}
		case "web":
			c.Web = decodeWeb(d, v)
		case "operators":
			decodeOperators(d, c, v)
		case "parallel":
			c.Parallel = d.Int(v, "parallel")
			if c.Parallel < 1 {
				d.Errorf(v, "parallel must be at least 1")
			}
		}
	})
	if c.Slack != nil {
		checkRuleGroups(d, c)
	}
	if c.Store == "" && c.StoreDSN.IsZero() {
		d.Errorf(root, "config: store is required (path of the SQLite file, or {env: NAME} or {file: /path} holding a postgres:// URL)")
	}
	d.Problems.Sort()
	return c, d.Problems
}

// decodeGroup reads one group: a list of Slack user ids, or a mapping
// with members and/or the Slack user group whose members are looked up
// when someone votes (so the on-call rotation in Slack is the truth).
func decodeGroup(d *yamlnode.Decoder, c *Config, name string, n *yaml.Node) {
	what := "groups." + name
	if n.Kind != yaml.MappingNode {
		c.Groups[name] = d.Strings(n, what)
		return
	}
	c.Groups[name] = nil
	d.Fields(n, what, []string{"members", "slack_usergroup"}, func(key string, _, v *yaml.Node) {
		switch key {
		case "members":
			c.Groups[name] = d.Strings(v, what+".members")
		case "slack_usergroup":
			id := d.String(v, what+".slack_usergroup")
			if !slackUsergroupID.MatchString(id) {
				d.Errorf(v, "%s.slack_usergroup must be a Slack user group id like S0123ABCD, got %q", what, id)
				return
			}
			c.SlackUsergroups[name] = id
		}
	})
}

// slackUsergroupID is the shape of a Slack user group id.
var slackUsergroupID = regexp.MustCompile(`^S[0-9A-Z]{2,}$`)

// checkMatchRegexps reports a route's /regex/ label values that do not
// compile, as the alert routes would refuse them at start.
func checkMatchRegexps(d *yamlnode.Decoder, r Route) {
	for label, v := range r.Match {
		if len(v) < 2 || !strings.HasPrefix(v, "/") || !strings.HasSuffix(v, "/") {
			continue
		}
		if _, err := regexp.Compile("^(?:" + v[1:len(v)-1] + ")$"); err != nil {
			d.ErrorAt(r.At.Of("match."+label), "route.match.%s: %v", label, err)
		}
	}
}

// slackChannelID is the shape of a Slack conversation id: public (C),
// private (G) or direct (D).
var slackChannelID = regexp.MustCompile(`^[CGD][0-9A-Z]{2,}$`)

// checkChannelID reports a channel given other than by its id: Slack's
// API takes ids, and a #name would fail at the first post, not at start.
func checkChannelID(d *yamlnode.Decoder, n *yaml.Node, what, ch string) {
	if !slackChannelID.MatchString(ch) {
		d.Errorf(n, "%s: %q is not a Slack channel id (C…, G… or D…, as in the channel's details; not its #name)", what, ch)
	}
}

// checkRuleGroups reports access rules naming a group that is neither in
// groups: nor a Slack user group id, once the whole file is read (groups:
// may come after slack:).
func checkRuleGroups(d *yamlnode.Decoder, c *Config) {
	names := slices.Sorted(maps.Keys(c.Groups))
	for _, r := range c.Slack.Authorize {
		for _, g := range r.Groups {
			if _, ok := c.Groups[g]; ok || slackUsergroupID.MatchString(g) {
				continue
			}
			d.ErrorAt(r.At.Of("groups"), "authorize rule: unknown group %q: define it under groups: or name a Slack user group id (S…)%s", g, yamlnode.DidYouMean(g, names))
		}
	}
}

func decodeSecret(d *yamlnode.Decoder, n *yaml.Node, what string) Secret {
	var s Secret
	if n.Kind == yaml.ScalarNode {
		d.Errorf(n, "%s must be a reference such as {env: NAME} or {file: /path}, never the secret itself", what)
		return s
	}
	d.Fields(n, what, []string{"env", "file"}, func(key string, _, v *yaml.Node) {
		if key == "env" {
			s.Env = d.String(v, what+".env")
		} else {
			// A secret file beside the config is read from there,
			// wherever serve was started.
			s.File = Resolve(d.File, d.String(v, what+".file"))
		}
	})
	if s.Env != "" && s.File != "" {
		d.Errorf(n, "%s: give env or file, not both", what)
	}
	if s.IsZero() {
		d.Errorf(n, "%s: give env or file", what)
	}
	return s
}

func decodeSlack(d *yamlnode.Decoder, n *yaml.Node) *Slack {
	s := &Slack{Mode: "http", Command: "/runbot", At: Positions{}}
	seen := map[string]bool{}
	d.Fields(n, "slack", []string{"mode", "bot_token", "signing_secret", "app_token", "channel", "command", "authorize", "redact", "api_url"}, func(key string, _, v *yaml.Node) {
		seen[key] = true
		s.At[key] = yamlnode.PosOf(v)
		switch key {
		case "mode":
			s.Mode = d.String(v, "slack.mode")
			if s.Mode != "http" && s.Mode != "socket" {
				d.Errorf(v, "slack.mode must be http or socket, got %q", s.Mode)
			}
		case "bot_token":
			s.BotToken = decodeSecret(d, v, "slack.bot_token")
		case "signing_secret":
			s.SigningSecret = decodeSecret(d, v, "slack.signing_secret")
		case "app_token":
			s.AppToken = decodeSecret(d, v, "slack.app_token")
		case "channel":
			s.Channel = d.String(v, "slack.channel")
			checkChannelID(d, v, "slack.channel", s.Channel)
		case "command":
			s.Command = d.String(v, "slack.command")
		case "api_url":
			s.APIURL = d.String(v, "slack.api_url")
		case "redact":
			s.Redact = d.Strings(v, "slack.redact")
			for i, p := range s.Redact {
				if _, err := regexp.Compile(p); err != nil {
					at := v
					if v.Kind == yaml.SequenceNode && i < len(v.Content) {
						at = v.Content[i]
					}
					d.Errorf(at, "slack.redact: %v", err)
				}
			}
		case "authorize":
			d.Items(v, "slack.authorize", func(_ int, rv *yaml.Node) {
				r := Rule{At: Positions{"": yamlnode.PosOf(rv)}}
				d.Fields(rv, "authorize rule", []string{"runbooks", "users", "groups", "channels"}, func(key string, _, v *yaml.Node) {
					r.At[key] = yamlnode.PosOf(v)
					list := d.Strings(v, "authorize."+key)
					switch key {
					case "runbooks":
						r.Runbooks = list
					case "users":
						r.Users = list
					case "groups":
						r.Groups = list
					case "channels":
						r.Channels = list
						for _, ch := range list {
							checkChannelID(d, v, "authorize.channels", ch)
						}
					}
				})
				if len(r.Runbooks) == 0 {
					d.Errorf(rv, `authorize rule: runbooks is required (names, or "*" for all)`)
				}
				if len(r.Users)+len(r.Groups) == 0 {
					d.Errorf(rv, "authorize rule: name who it allows: users (Slack user ids) or groups (a group of this file or a Slack user group id S…); a rule of runbooks and channels alone allows nobody")
				}
				s.Authorize = append(s.Authorize, r)
			})
		}
	})
	if !seen["bot_token"] {
		d.Errorf(n, "slack: bot_token is required")
	}
	if s.Mode == "http" && !seen["signing_secret"] {
		d.Errorf(n, "slack: signing_secret is required in http mode")
	}
	if s.Mode == "socket" && !seen["app_token"] {
		d.Errorf(n, "slack: app_token is required in socket mode")
	}
	return s
}

// decodeGeneric reads alerts.generic, the mapping of POST /alerts/generic.
func decodeGeneric(d *yamlnode.Decoder, n *yaml.Node) *GenericAlerts {
	g := &GenericAlerts{}
	keys := []string{"alerts", "alertname", "fingerprint", "status", "resolved_values", "labels", "labels_from",
		"annotations", "annotations_from", "starts_at"}
	d.Fields(n, "alerts.generic", keys, func(key string, _, v *yaml.Node) {
		what := "alerts.generic." + key
		switch key {
		case "alerts":
			g.Alerts = d.String(v, what)
		case "alertname":
			g.Alertname = d.String(v, what)
		case "fingerprint":
			g.Fingerprint = d.String(v, what)
		case "status":
			g.Status = d.String(v, what)
		case "resolved_values":
			g.ResolvedValues = d.Strings(v, what)
		case "labels":
			g.Labels = d.StringMap(v, what)
		case "labels_from":
			g.LabelsFrom = d.String(v, what)
		case "annotations":
			g.Annotations = d.StringMap(v, what)
		case "annotations_from":
			g.AnnotationsFrom = d.String(v, what)
		case "starts_at":
			g.StartsAt = d.String(v, what)
		}
	})
	if g.Alertname == "" {
		d.Errorf(n, "alerts.generic.alertname is required: the path of each alert's name")
	}
	return g
}

func decodeAlerts(d *yamlnode.Decoder, n *yaml.Node) *Alerts {
	a := &Alerts{DedupWindow: 30 * time.Minute, MaxQueue: 100, MaxBody: 1 << 20, At: Positions{}}
	d.Fields(n, "alerts", []string{"bearer_token", "basic_auth", "dedup_window", "max_queue", "max_body", "channel", "messages", "generic", "routes"}, func(key string, _, v *yaml.Node) {
		a.At[key] = yamlnode.PosOf(v)
		switch key {
		case "bearer_token":
			a.BearerToken = decodeSecret(d, v, "alerts.bearer_token")
		case "basic_auth":
			d.Fields(v, "alerts.basic_auth", []string{"user", "password"}, func(key string, _, v *yaml.Node) {
				a.At["basic_auth."+key] = yamlnode.PosOf(v)
				if key == "user" {
					a.BasicUser = d.String(v, "basic_auth.user")
				} else {
					a.BasicPass = decodeSecret(d, v, "alerts.basic_auth.password")
				}
			})
		case "dedup_window":
			a.DedupWindow = d.Duration(v, "alerts.dedup_window")
		case "max_queue":
			a.MaxQueue = d.Int(v, "alerts.max_queue")
		case "max_body":
			a.MaxBody = int64(d.Int(v, "alerts.max_body"))
		case "channel":
			a.Channel = d.String(v, "alerts.channel")
			checkChannelID(d, v, "alerts.channel", a.Channel)
		case "messages":
			a.Messages = d.String(v, "alerts.messages")
			if a.Messages != "group" && a.Messages != "alert" {
				d.Errorf(v, "alerts.messages: %q is neither group (one summary per Alertmanager group, the default) nor alert (one message per alert)", a.Messages)
			}
		case "generic":
			a.Generic = decodeGeneric(d, v)
		case "routes":
			d.Items(v, "alerts.routes", func(_ int, rv *yaml.Node) {
				r := Route{At: Positions{"": yamlnode.PosOf(rv)}}
				d.Fields(rv, "alert route", []string{"match", "runbook", "params"}, func(key string, _, v *yaml.Node) {
					r.At[key] = yamlnode.PosOf(v)
					switch key {
					case "match":
						r.Match = d.StringMap(v, "route.match")
						r.At.record("match.", v)
						checkMatchRegexps(d, r)
					case "runbook":
						r.Runbook = d.String(v, "route.runbook")
					case "params":
						r.Params = d.StringMap(v, "route.params")
						r.At.record("params.", v)
					}
				})
				if r.Runbook == "" || len(r.Match) == 0 {
					d.Errorf(rv, "alert route needs match and runbook")
				}
				a.Routes = append(a.Routes, r)
			})
		}
	})
	if a.BearerToken.IsZero() && a.BasicPass.IsZero() {
		d.Errorf(n, "alerts: configure bearer_token or basic_auth; the webhook never runs unauthenticated")
	}
	return a
}

func decodeSchedule(d *yamlnode.Decoder, n *yaml.Node) Schedule {
	s := Schedule{Post: "on_change", TimeZone: "UTC", At: Positions{"": yamlnode.PosOf(n)}}
	var deployments, parallel *yaml.Node
	d.Fields(n, "schedule", []string{"runbook", "cron", "timezone", "params", "post", "channel", "deployments", "parallel"}, func(key string, _, v *yaml.Node) {
		s.At[key] = yamlnode.PosOf(v)
		switch key {
		case "runbook":
			s.Runbook = d.String(v, "schedule.runbook")
		case "cron":
			s.Cron = d.String(v, "schedule.cron")
			if _, err := cronspec.Parse(s.Cron); err != nil {
				d.Errorf(v, "schedule.cron: %v", err)
			}
		case "timezone":
			s.TimeZone = d.String(v, "schedule.timezone")
			if _, err := time.LoadLocation(s.TimeZone); err != nil {
				d.Errorf(v, "schedule.timezone: unknown zone %q", s.TimeZone)
			}
		case "params":
			s.Params = d.StringMap(v, "schedule.params")
			s.At.record("params.", v)
		case "post":
			s.Post = d.String(v, "schedule.post")
			if !slices.Contains([]string{"always", "on_change", "on_failure"}, s.Post) {
				d.Errorf(v, "schedule.post must be always, on_change or on_failure, got %q", s.Post)
			}
		case "channel":
			s.Channel = d.String(v, "schedule.channel")
			checkChannelID(d, v, "schedule.channel", s.Channel)
		case "deployments":
			deployments = v
			s.Deployments = d.String(v, "schedule.deployments")
			if s.Deployments == "" {
				d.Errorf(v, `schedule.deployments must be "all" or a glob of deployment names such as "dsv4-*"`)
			} else if _, err := path.Match(s.Deployments, ""); err != nil {
				d.Errorf(v, "schedule.deployments %q: %v", s.Deployments, err)
			}
		case "parallel":
			parallel = v
			s.Parallel = d.Int(v, "schedule.parallel")
			if s.Parallel < 1 {
				d.Errorf(v, "schedule.parallel must be at least 1, got %d", s.Parallel)
			}
		}
	})
	if s.Runbook == "" || s.Cron == "" {
		d.Errorf(n, "schedule needs runbook and cron")
	}
	switch {
	case deployments != nil && hasKey(s.Params, "deployment"):
		d.Errorf(deployments, "schedule.deployments and schedule.params.deployment are both set: a fleet audit sets the deployment for each run; keep one")
	case deployments == nil && parallel != nil:
		d.Errorf(parallel, "schedule.parallel needs schedule.deployments: only a fleet audit runs deployments in parallel")
	case deployments != nil && parallel == nil:
		s.Parallel = DefaultScheduleParallel
	}
	return s
}

func hasKey(m map[string]string, k string) bool {
	_, ok := m[k]
	return ok
}
