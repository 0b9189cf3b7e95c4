package heartbeat_test

import (
	"errors"
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

// A failed attempt is reported at once with its reason, not after the
// loop's gap has passed, and a beat clears it.
func TestFailedAttemptIsReportedAtOnce(t *testing.T) {
	now := time.Date(2026, 6, 18, 20, 38, 0, 0, time.UTC)
	m := heartbeat.New(func() time.Time { return now })
	m.Register("slack", 3*time.Minute)
	m.Beat("slack")
	now = now.Add(time.Second)
	m.Fail("slack", errors.New("auth.test: invalid_auth"))
	stuck := m.Check()
	require.Len(t, stuck, 1)
	require.Equal(t, "slack is down: auth.test: invalid_auth", stuck[0].String())
	m.Beat("slack")
	require.Empty(t, m.Check())
}
