package approvals

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/config"
)

// A refusal of someone not among the approvers says when a group the
// approvers name follows a Slack user group, whose members the CLI does
// not look up: the config's own members of it may vote from the CLI.
func TestApproveHintsAtSlackUsergroups(t *testing.T) {
	t.Parallel()
	v := &Voter{Identity: "U0ALICE", Config: &config.Config{File: "/etc/runbot/runbot.yaml",
		Groups: map[string][]string{"oncall": {"U0BOB"}, "db": {"U0CAROL"}}, SlackUsergroups: map[string]string{"oncall": "S0ONCALL"}}}
	for _, tc := range []struct {
		name      string
		approvers []string
		want      string
	}{
		{"a group that follows a Slack user group", []string{"U0BOB", "@oncall"},
			"the members of Slack user group(s) of oncall are not looked up from the CLI: list U0ALICE under groups.oncall.members in /etc/runbot/runbot.yaml to vote from here"},
		{"written group:NAME", []string{"group:oncall"}, "the members of Slack user group(s) of oncall are not looked up"},
		{"groups of the config only", []string{"@db", "U0BOB"}, ""},
		{"people only", []string{"U0BOB"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := v.usergroupHint(tc.approvers)
			if tc.want == "" {
				require.Empty(t, got)
				return
			}
			require.Contains(t, got, tc.want)
		})
	}
}
