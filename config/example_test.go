package config_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/config"
)

// TestShippedExampleConfigIsValid keeps deploy/runbot.yaml loadable.
func TestShippedExampleConfigIsValid(t *testing.T) {
	c, err := config.Load("../deploy/runbot.yaml")
	require.NoError(t, err)
	require.NotNil(t, c.Slack)
	require.NotNil(t, c.Alerts)
	require.Len(t, c.Schedules, 2)
	require.Equal(t, "all", c.Schedules[1].Deployments)
	require.Equal(t, map[string]string{"alice": "U01ALICE", "bob": "U02BOB"}, c.Operators)
}
