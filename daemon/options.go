package daemon

import (
	"log/slog"
	"time"

	"github.com/runbot/runbot/store"
)

// Option configures Run beyond its config file: test hooks that a
// production serve never sets.
type Option func(*runOptions)

type runOptions struct {
	// hostClockOffset shifts this replica's host clock for the store;
	// hostClockShifted says it was set, even to zero.
	hostClockOffset  time.Duration
	hostClockShifted bool
}

// WithHostClockOffset is a test hook for a host whose clock is off: the
// store takes this replica's host clock to read time.Now plus d
// (store.WithHostClockOffset). On PostgreSQL the store judges leases,
// locks, claims and approval windows by the database's clock, so an
// end-to-end test can show that a replica 30 s fast or slow changes
// nothing. runbot serve sets it from RUNBOT_TEST_CLOCK_OFFSET.
func WithHostClockOffset(d time.Duration) Option {
	return func(o *runOptions) { o.hostClockOffset, o.hostClockShifted = d, true }
}

// storeOptions are the store options the run options ask for, and says so
// in the log: a replica whose clock a test shifted must not pass for one
// that runs as it would in production.
func (o runOptions) storeOptions(log *slog.Logger) []store.Option {
	if !o.hostClockShifted {
		return nil
	}
	log.Warn("test hook: this replica's host clock is shifted by " + o.hostClockOffset.String() + " (RUNBOT_TEST_CLOCK_OFFSET)")
	return []store.Option{store.WithHostClockOffset(o.hostClockOffset)}
}
