package heartbeat_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/heartbeat"
)

func TestStuckLoopIsNamedAndRecovers(t *testing.T) {
	now := time.Date(2026, 6, 18, 20, 38, 0, 0, time.UTC)
	m := heartbeat.New(func() time.Time { return now })
	m.Register("scheduler", 30*time.Second)
	m.Register("dispatcher", 30*time.Second)
	require.Empty(t, m.Check())

	now = now.Add(20 * time.Second)
	m.Beat("dispatcher")
	now = now.Add(20 * time.Second)
	stuck := m.Check()
	require.Len(t, stuck, 1)
	require.Equal(t, "scheduler", stuck[0].Loop)
	require.Equal(t, "scheduler has made no progress for 40s (limit 30s)", stuck[0].String())

	m.Beat("scheduler")
	require.Empty(t, m.Check())
}
