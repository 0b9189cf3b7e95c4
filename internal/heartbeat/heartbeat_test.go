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

// A loop is hung only when it stops going round: attempts that fail, or
// that it records as tried, keep it from being hung, while Check still
// reports it; a loop that does nothing at all is hung after its gap, in a
// joined monitor too.
func TestHungIsALoopThatStoppedGoingRound(t *testing.T) {
	for _, tc := range []struct {
		name    string
		attempt func(m *heartbeat.Monitor)
		hung    bool
		checked string
	}{
		{"failing", func(m *heartbeat.Monitor) { m.Fail("store", errors.New("probe store: no answer within 2s")) },
			false, "store is down: probe store: no answer within 2s"},
		{"tried", func(m *heartbeat.Monitor) { m.Tried("store") }, false, "store has made no progress for 40s (limit 30s)"},
		{"beating", func(m *heartbeat.Monitor) { m.Beat("store") }, false, ""},
		{"silent", func(*heartbeat.Monitor) {}, true, "store has made no progress for 40s (limit 30s)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Date(2026, 6, 18, 20, 38, 0, 0, time.UTC)
			m := heartbeat.New(func() time.Time { return now })
			m.Register("store", 30*time.Second)
			watch := heartbeat.Join(m)
			for range 4 {
				now = now.Add(10 * time.Second)
				tc.attempt(m)
			}
			if tc.hung {
				require.Len(t, watch.Hung(), 1)
				require.Equal(t, "store", watch.Hung()[0].Loop)
			} else {
				require.Empty(t, watch.Hung())
			}
			var checked string
			if s := m.Check(); len(s) > 0 {
				checked = s[0].String()
			}
			require.Equal(t, tc.checked, checked)
		})
	}
}
