package store

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A measurement of the database's clock takes the offset at the midpoint
// of the round trip, off by at most half of it (plus the microsecond the
// database truncates), and the store judges its own lease by the late side
// of that and others' by the early side.
func TestDBClockMeasurement(t *testing.T) {
	local := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name           string
		skew, rtt      time.Duration
		offset, margin time.Duration
	}{
		{"in step", 0, 2 * time.Millisecond, 0, time.Millisecond + time.Microsecond},
		{"host 30s fast", 30 * time.Second, 2 * time.Millisecond, -30 * time.Second, time.Millisecond + time.Microsecond},
		{"host 30s slow", -30 * time.Second, 10 * time.Millisecond, 30 * time.Second, 5*time.Millisecond + time.Microsecond},
		{"no round trip", 0, 0, 0, time.Microsecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			host := local
			s := &sqlStore{now: func() time.Time { return host }, dbTime: dbClock{measured: true}}
			before := local.Add(tc.skew)
			at := local.Add(tc.rtt / 2) // the database read its clock halfway
			s.dbTime.set(before, at, before.Add(tc.rtt))
			offset, margin := s.dbTime.read()
			require.Equal(t, tc.offset, offset)
			require.Equal(t, tc.margin, margin)

			host = before.Add(time.Minute)
			now := s.clock()
			require.Equal(t, local.Add(time.Minute), now, "the database's time, whatever the host's clock says")
			require.Equal(t, now.Add(margin), s.dbLatest(now))
			require.Equal(t, now.Add(-margin), s.dbEarliest(now))
		})
	}
}

// A store that does not read the database's clock (SQLite, a test's clock)
// keeps its own: no offset, no margin.
func TestDBClockUnmeasured(t *testing.T) {
	at := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	s := &sqlStore{now: func() time.Time { return at }}
	require.NoError(t, s.syncClock(t.Context(), nil))
	require.Equal(t, at, s.clock())
	require.Equal(t, at, s.dbLatest(at))
	require.Equal(t, at, s.dbEarliest(at))
}
