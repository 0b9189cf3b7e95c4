package daemon

import (
	"testing"
	"time"

	"github.com/runbot/runbot/config"
	"github.com/stretchr/testify/require"
)

// TestReloadableKeepsWhatNeedsARestart: a reload installs the runbooks,
// the inventory, the schedules, the groups and slack.authorize, and keeps
// the running value of every other setting, naming it; a setting written
// on another line is not a change.
func TestReloadableKeepsWhatNeedsARestart(t *testing.T) {
	base := func() *config.Config {
		return &config.Config{
			File: "runbot.yaml", Listen: "127.0.0.1:8080", Store: "/var/lib/runbot/runbot.db", Inventory: "inv.yaml", Runbooks: []string{"books"},
			Log: config.Log{Format: "text", Level: "info"}, Groups: map[string][]string{"sre": {"U1"}}, SlackUsergroups: map[string]string{},
			Slack:         &config.Slack{Mode: "http", Channel: "C1", Command: "/runbot", Authorize: []config.Rule{{Runbooks: []string{"*"}, Groups: []string{"sre"}}}, At: config.Positions{"mode": {Line: 3}}},
			Schedules:     []config.Schedule{{Runbook: "probe", Cron: "@hourly"}},
			ShutdownGrace: 30 * time.Second, Parallel: 4, At: config.Positions{"listen": {Line: 1}},
		}
	}
	cases := []struct {
		name    string
		edit    func(*config.Config)
		restart []string
		check   func(t *testing.T, running, got *config.Config)
	}{
		{"nothing changed", func(*config.Config) {}, nil, nil},
		{"moved lines only", func(c *config.Config) {
			c.At = config.Positions{"listen": {Line: 7}}
			c.Slack.At = config.Positions{"mode": {Line: 9}}
		}, nil, nil},
		{"reloadable settings", func(c *config.Config) {
			c.Inventory, c.Runbooks = "other.yaml", []string{"books", "more"}
			c.Groups = map[string][]string{"sre": {"U1", "U2"}}
			c.Schedules = append(c.Schedules, config.Schedule{Runbook: "fresh", Cron: "@daily"})
			c.Slack.Authorize = nil
		}, nil, func(t *testing.T, _, got *config.Config) {
			t.Helper()
			require.Equal(t, "other.yaml", got.Inventory)
			require.Equal(t, []string{"books", "more"}, got.Runbooks)
			require.Len(t, got.Schedules, 2)
			require.Equal(t, []string{"U1", "U2"}, got.Groups["sre"])
			require.Empty(t, got.Slack.Authorize)
		}},
		{"listen and store", func(c *config.Config) {
			c.Listen, c.Store = "0.0.0.0:9090", "/tmp/other.db"
			c.Inventory = "other.yaml"
		}, []string{"listen", "store"}, func(t *testing.T, running, got *config.Config) {
			t.Helper()
			require.Equal(t, running.Listen, got.Listen)
			require.Equal(t, running.Store, got.Store)
			require.Equal(t, "other.yaml", got.Inventory, "what can change still does")
		}},
		{"slack mode keeps the whole section", func(c *config.Config) {
			c.Slack.Mode = "socket"
			c.Slack.Authorize = nil
		}, []string{"slack"}, func(t *testing.T, running, got *config.Config) {
			t.Helper()
			require.Same(t, running.Slack, got.Slack, "slack is kept whole, its authorize rules too")
		}},
		{"the rest", func(c *config.Config) {
			c.TLS = &config.TLS{Cert: "c", Key: "k"}
			c.Log.Level = "debug"
			c.Web = &config.Web{TrustHeader: "X-User"}
			c.Alerts = &config.Alerts{Channel: "C2"}
			c.ShutdownGrace, c.Parallel, c.SSHIdleTimeout = time.Minute, 8, time.Hour
			c.SlackUsergroups = map[string]string{"sre": "S1"}
		}, []string{"tls", "log", "slack_usergroups", "alerts", "web", "shutdown_grace", "parallel", "ssh_idle_timeout"},
			func(t *testing.T, running, got *config.Config) {
				t.Helper()
				require.Nil(t, got.TLS)
				require.Nil(t, got.Web)
				require.Nil(t, got.Alerts)
				require.Equal(t, running.Log, got.Log)
				require.Equal(t, running.Parallel, got.Parallel)
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			running, next := base(), base()
			tc.edit(next)
			got, restart := reloadable(running, next)
			require.Equal(t, tc.restart, restart)
			if tc.check != nil {
				tc.check(t, running, got)
			}
		})
	}
}
