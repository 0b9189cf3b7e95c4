package xdg_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/xdg"
)

func TestState(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/srv/state")
	require.Equal(t, "/srv/state/runbot/runbot.db", xdg.State("runbot.db", "runbot.db"))
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("HOME", "/home/alice")
	require.Equal(t, "/home/alice/.local/state/runbot/demo.db", xdg.State("demo.db", "runbot-demo.db"))
	t.Setenv("HOME", "")
	require.Equal(t, "runbot-demo.db", xdg.State("demo.db", "runbot-demo.db"), "no home: the working directory")
}
