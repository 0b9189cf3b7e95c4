package config_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/config"
)

func TestBrokenConfigReportsEveryProblemWithPosition(t *testing.T) {
	_, err := config.Load("testdata/broken.yaml")
	require.Error(t, err)
	want := `testdata/broken.yaml:1:9: listen must be host:port with a port from 1 to 65535 or a TCP service name, got "nonsense": missing port in address
testdata/broken.yaml:5:14: slack.bot_token must be a reference such as {env: NAME} or {file: /path}, never the secret itself
testdata/broken.yaml:8:3: alerts: configure bearer_token or basic_auth; the webhook never runs unauthenticated
testdata/broken.yaml:8:17: alerts.dedup_window must be a duration like 30s or 5m, got "soon"
testdata/broken.yaml:10:38: schedule.cron: expected 5 to 6 fields, found 2: [every ten]
testdata/broken.yaml:10:57: schedule.post must be always, on_change or on_failure, got "sometimes"
testdata/broken.yaml:11:62: schedule.deployments "dsv4-[": syntax error in pattern
testdata/broken.yaml:11:62: schedule.deployments and schedule.params.deployment are both set: a fleet audit sets the deployment for each run; keep one
testdata/broken.yaml:11:110: schedule.parallel must be at least 1, got 0
testdata/broken.yaml:12:59: schedule.parallel needs schedule.deployments: only a fleet audit runs deployments in parallel
testdata/broken.yaml:13:1: config: unknown key "logg" (did you mean "log"?)
testdata/broken.yaml:15:29: groups.oncall.slack_usergroup must be a Slack user group id like S0123ABCD, got "@oncall"
testdata/broken.yaml:16:19: ssh_idle_timeout must be 0 (keep connections) or positive, got -5m0s`
	require.Equal(t, want, err.Error())
	require.NotContains(t, err.Error(), "xoxb-a-real-token", "a pasted secret must never be echoed")
}

func TestSecretsNeverPrint(t *testing.T) {
	c, err := config.Load("testdata/good.yaml")
	require.NoError(t, err)
	t.Setenv("SLACK_BOT_TOKEN", "xoxb-secret-value")
	v, err := c.Slack.BotToken.Load()
	require.NoError(t, err)
	require.Equal(t, "xoxb-secret-value", v.Reveal())
	for _, s := range []string{fmt.Sprint(v), fmt.Sprintf("%v %+v %#v %s", c.Slack, c.Slack, v, v)} {
		require.NotContains(t, s, "xoxb-secret-value")
	}
	_, err = c.Slack.SigningSecret.Load()
	require.ErrorContains(t, err, "/run/secrets/slack-signing")
}

// A group is a list of user ids, or members plus a Slack user group.
func TestGroupsListOrSlackUsergroup(t *testing.T) {
	c, err := config.Load("testdata/good.yaml")
	require.NoError(t, err)
	require.Equal(t, map[string][]string{"sre-oncall": {"U01ALICE", "U02BOB"}, "gpu-owners": {"U03CAROL"}}, c.Groups)
	require.Equal(t, map[string]string{"gpu-owners": "S0GPUOWN"}, c.SlackUsergroups)
}

// A schedule names one deployment in its params, or a fleet: every
// deployment or a glob, 4 at a time unless it says otherwise.
func TestFleetSchedules(t *testing.T) {
	c, err := config.Load("testdata/good.yaml")
	require.NoError(t, err)
	for i := range c.Schedules {
		require.NotEmpty(t, c.Schedules[i].At, "where schedule %d was written", i+1)
		c.Schedules[i].At = nil
	}
	require.Equal(t, []config.Schedule{
		{Runbook: "sglang-pd-audit", Cron: "*/10 * * * *", TimeZone: "UTC", Params: map[string]string{"deployment": "dsv4"}, Post: "on_change"},
		{Runbook: "sglang-pd-audit", Cron: "0 * * * *", TimeZone: "UTC", Post: "on_change", Deployments: "all", Parallel: config.DefaultScheduleParallel},
		{Runbook: "sglang-pd-audit", Cron: "30 * * * *", TimeZone: "UTC", Post: "on_failure", Deployments: "dsv4-*", Parallel: 2, Params: map[string]string{"samples": "3"}},
	}, c.Schedules)
}

// An access rule that allows nobody, names a group defined nowhere or a
// channel by its #name is refused where it was written: the checks the
// chat commands would make at start-up, made while the file is read.
func TestAccessRulesReportedAtTheirPosition(t *testing.T) {
	src := `store: /tmp/x.db
slack:
  bot_token: {env: T}
  signing_secret: {env: S}
  channel: "#incidents"
  authorize:
    - {runbooks: ["*"], groups: [sre-oncal]}
    - {runbooks: [host-basics], channels: [C0INCIDENTS]}
    - {users: [U1], channels: ["#general"]}
    - {runbooks: ["*"], groups: [S0ONCALL, sre-oncall]}
groups:
  sre-oncall: [U1]
`
	_, err := config.Parse("runbot.yaml", []byte(src))
	require.Error(t, err)
	require.Equal(t, `runbot.yaml:5:12: slack.channel: "#incidents" is not a Slack channel id (C…, G… or D…, as in the channel's details; not its #name)
runbot.yaml:7:33: authorize rule: unknown group "sre-oncal": define it under groups: or name a Slack user group id (S…) (did you mean "sre-oncall"?)
runbot.yaml:8:7: authorize rule: name who it allows: users (Slack user ids) or groups (a group of this file or a Slack user group id S…); a rule of runbooks and channels alone allows nobody
runbot.yaml:9:7: authorize rule: runbooks is required (names, or "*" for all)
runbot.yaml:9:31: authorize.channels: "#general" is not a Slack channel id (C…, G… or D…, as in the channel's details; not its #name)`, err.Error())
}

// A route's /regex/ and a redaction pattern that do not compile, and
// alert and schedule channels given by name, are reported where they were
// written.
func TestRegexpsReportedAtTheirPosition(t *testing.T) {
	src := `store: /tmp/x.db
slack:
  bot_token: {env: T}
  signing_secret: {env: S}
  redact: ['ok', '(unclosed']
alerts:
  bearer_token: {env: A}
  channel: alerts
  routes:
    - {match: {alertname: '/Hang[/'}, runbook: sglang-pd-wedge}
schedules:
  - {runbook: host-basics, cron: "@hourly", channel: "#ops"}
`
	_, err := config.Parse("runbot.yaml", []byte(src))
	require.Error(t, err)
	require.Equal(t, "runbot.yaml:5:18: slack.redact: error parsing regexp: missing closing ): `(unclosed`\n"+
		"runbot.yaml:8:12: alerts.channel: \"alerts\" is not a Slack channel id (C…, G… or D…, as in the channel's details; not its #name)\n"+
		"runbot.yaml:10:27: route.match.alertname: error parsing regexp: missing closing ]: `[)$`\n"+
		"runbot.yaml:12:54: schedule.channel: \"#ops\" is not a Slack channel id (C…, G… or D…, as in the channel's details; not its #name)", err.Error())
}

// serve closes SSH connections left idle: after 5 minutes unless the
// config says otherwise, never when it says 0.
func TestSSHIdleTimeout(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		want       time.Duration
	}{
		{"default", "", config.DefaultSSHIdleTimeout},
		{"set", "ssh_idle_timeout: 90s\n", 90 * time.Second},
		{"kept for good", "ssh_idle_timeout: 0s\n", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "runbot.yaml")
			require.NoError(t, os.WriteFile(path, []byte("store: /var/lib/runbot/runbot.db\n"+tc.line), 0o600))
			c, err := config.Load(path)
			require.NoError(t, err)
			require.Equal(t, tc.want, c.SSHIdleTimeout)
		})
	}
}

// The alert section says how alert messages are laid out and enables the
// generic JSON webhook; a wrong layout or a generic mapping without the
// path of the alert's name is reported where it was written.
func TestAlertMessagesAndGenericWebhook(t *testing.T) {
	src := `store: /tmp/x.db
alerts:
  bearer_token: {env: A}
  messages: alert
  generic:
    alerts: data.alerts
    alertname: rule
    status: state
    resolved_values: [ok]
    labels: {host: node}
    labels_from: tags
`
	c, err := config.Parse("runbot.yaml", []byte(src))
	require.NoError(t, err)
	require.Equal(t, "alert", c.Alerts.Messages)
	require.Equal(t, &config.GenericAlerts{Alerts: "data.alerts", Alertname: "rule", Status: "state", ResolvedValues: []string{"ok"},
		Labels: map[string]string{"host": "node"}, LabelsFrom: "tags"}, c.Alerts.Generic)

	_, err = config.Parse("runbot.yaml", []byte(`store: /tmp/x.db
alerts:
  bearer_token: {env: A}
  messages: thread
  generic: {labels_from: tags}
`))
	require.Error(t, err)
	require.Equal(t, "runbot.yaml:4:13: alerts.messages: \"thread\" is neither group (one summary per Alertmanager group, the default) nor alert (one message per alert)\n"+
		"runbot.yaml:5:12: alerts.generic.alertname is required: the path of each alert's name", err.Error())
}
