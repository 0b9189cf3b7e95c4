package store

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// dbClock is what a store on PostgreSQL knows of the database's clock: its
// offset from this process's clock, measured by reading the database's time
// (dialect.clock) at open and at every lease renewal, and how far that
// measurement can be off. Replicas on several hosts judge each other's
// leases, locks and claims by the expiries they wrote; when every replica
// reads and writes those times on the database's clock, a host whose own
// clock runs 30 s fast does not see another replica's lease expire 30 s
// early (and take over its work), and one whose clock runs slow does not
// act on its own lease 30 s after the others count it dead.
//
// The database's time is read between two readings of the local clock; it
// was taken at some instant between them, so the offset is taken at their
// midpoint and is off by at most half the round trip (margin). The store
// judges on the conservative side of that: its own lease as expiring
// margin earlier (dbLatest), another's lease, lock or claim as expiring
// margin later (dbEarliest).
//
// A store whose clock is a test's (WithNow) or on SQLite (one file on one
// host, so one clock) measures nothing: its offset and margin stay zero.
type dbClock struct {
	// measured says this store reads the database's clock.
	measured bool
	mu       sync.Mutex
	// offset is the database's clock minus this process's.
	offset time.Duration
	// margin is how far offset may be off either way.
	margin time.Duration
}

// read returns the offset and margin of the latest measurement.
func (c *dbClock) read() (offset, margin time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.offset, c.margin
}

// set records a measurement: the database's clock read at, read between
// the local readings before and after.
func (c *dbClock) set(before, at, after time.Time) {
	rtt := max(after.Sub(before), 0) // monotonic when both readings have it
	mid := before.Add(rtt / 2).Round(0)
	c.mu.Lock()
	defer c.mu.Unlock()
	// The database reports microseconds, truncated.
	c.offset, c.margin = at.Sub(mid), rtt/2+time.Microsecond
}

// clock returns the time on the database's clock, as best this process
// knows it: its own clock corrected by the latest measured offset. On
// SQLite and with a test's clock it is that clock.
func (s *sqlStore) clock() time.Time {
	offset, _ := s.dbTime.read()
	return s.now().UTC().Add(offset)
}

// Now implements Store.
func (s *sqlStore) Now() time.Time { return s.clock() }

// dbLatest is the latest the database's clock may read when this process
// reads now: a lease of this process's own counts as expired once it has
// expired by then.
func (s *sqlStore) dbLatest(now time.Time) time.Time {
	_, margin := s.dbTime.read()
	return now.Add(margin)
}

// dbEarliest is the earliest the database's clock may read when this
// process reads now: another process's lease, lock or claim counts as
// expired only once it has expired by then.
func (s *sqlStore) dbEarliest(now time.Time) time.Time {
	_, margin := s.dbTime.read()
	return now.Add(-margin)
}

// claimable returns ErrLeaseExpired when this process's lease may have
// expired by the database's clock at now.
func (s *sqlStore) claimable(now time.Time) error {
	return s.lease.claimable(s.dbLatest(now))
}

// syncClock measures the offset of the database's clock through q (the
// pool, or the transaction of a lease renewal), when this store reads it.
func (s *sqlStore) syncClock(ctx context.Context, q querier) error {
	if !s.dbTime.measured {
		return nil
	}
	before := s.now()
	var at int64
	if err := q.QueryRowContext(ctx, q.dialect().clock).Scan(&at); err != nil {
		return fmt.Errorf("read the database's clock: %w", err)
	}
	after := s.now()
	s.dbTime.set(before, time.Unix(0, at), after)
	return nil
}
