package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"
)

// Lease defaults: a replica renews its lease every DefaultHeartbeat and
// the lease lasts DefaultLeaseTTL, so that two missed renewals (a slow
// database, a long GC pause) do not yet count it dead, and a replica that
// died is recovered by another one within DefaultLeaseTTL plus one
// recovery sweep (DefaultRecoveryInterval).
const (
	DefaultLeaseTTL         = 30 * time.Second
	DefaultHeartbeat        = 10 * time.Second
	DefaultRecoveryInterval = 10 * time.Second
)

// replicaPruneAfter is how long a replica row outlives its lease before
// MarkInterrupted deletes it: long enough that the rows it owned were
// recovered many sweeps ago, short enough that a fleet restarting every
// day does not pile up rows.
const replicaPruneAfter = 7 * 24 * time.Hour

// Replica is one process's lease on the rows it owns (running runs,
// applying plans, started work): while the lease is unexpired, no other
// process recovers them.
type Replica struct {
	Owner string `json:"owner"`
	// Since is when the process first registered.
	Since   time.Time `json:"since"`
	Renewed time.Time `json:"renewed"`
	Expires time.Time `json:"expires"`
}

// Replicas are the leases of the processes sharing the store.
type Replicas interface {
	// Heartbeat registers this process's lease, or renews it, for ttl
	// from now. When the lease had expired before this renewal, it is
	// renewed all the same and a *LeaseLapsedError says so: another
	// process may have recovered (interrupted) what this one owned.
	Heartbeat(ctx context.Context, ttl time.Duration) (Replica, error)
	// Resign expires this process's lease now, so that what it leaves
	// behind is recovered at the next sweep instead of after the TTL. A
	// process resigns as it exits.
	Resign(ctx context.Context) error
	// ListReplicas returns every lease on record, expired ones too,
	// oldest registration first.
	ListReplicas(ctx context.Context) ([]Replica, error)
}

// LeaseLapsedError says that a replica's lease had expired before it was
// renewed: for that long, other processes counted it dead.
type LeaseLapsedError struct {
	Owner   string
	Expired time.Time
	Renewed time.Time
}

func (e *LeaseLapsedError) Error() string {
	return fmt.Sprintf("lease of %s had expired at %s, %s before it was renewed: other replicas may have recovered what it owned",
		e.Owner, e.Expired.Format(time.RFC3339Nano), e.Renewed.Sub(e.Expired).Round(time.Millisecond))
}

// ErrLeaseExpired is returned (wrapped) by a claim (work, a schedule tick,
// chat messages to deliver, a lock, a plan to apply) while this process's
// lease has expired without being renewed: other replicas count it dead and
// recover what it owns, so what it would claim now could be recovered (and
// run again) before it renews. KeepAlive renews it within a heartbeat of
// the database answering again; claims succeed from then on.
var ErrLeaseExpired = errors.New("this process's replica lease expired before it was renewed: it claims nothing until the lease is renewed")

// leaseView is what a store knows of its process's lease from its own
// heartbeats, for two judgments that hold only while the lease does. A
// process whose lease expired must not claim: a sweep elsewhere may recover
// the claim as a dead owner's (claimable). And a sweep must not count
// another replica dead for an expired lease when this process could not
// renew its own either: the database was out of reach (a failover, a
// partition), perhaps of every replica at once, and the others renew as
// soon as they reach it again (blind). A process that never took a lease
// is held to neither.
type leaseView struct {
	mu sync.Mutex
	// until is when the lease expires as the last renewal that committed
	// set it; zero until the first one.
	until time.Time
	// failing says the last renewal failed; trustFrom is when expired
	// leases count again after renewals succeed once more (one TTL later,
	// when every live replica has renewed).
	failing   bool
	trustFrom time.Time
}

// renewed records a renewal that committed r, lapsed if the lease had
// expired before it.
func (l *leaseView) renewed(r Replica, ttl time.Duration, lapsed bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if lapsed || l.failing {
		l.trustFrom = r.Renewed.Add(ttl)
	}
	l.failing, l.until = false, r.Expires
}

// failed records a renewal that failed.
func (l *leaseView) failed() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failing = true
}

// claimable returns ErrLeaseExpired when the lease has expired at now.
func (l *leaseView) claimable(now time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.until.IsZero() && !l.until.After(now) {
		return ErrLeaseExpired
	}
	return nil
}

// blind reports whether an expired lease proves nothing at now.
func (l *leaseView) blind(now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failing || now.Before(l.trustFrom)
}

// ownerLive is the package's ownerLive as this process may apply it at
// now: while it is blind to expired leases, only a PID check on this host
// proves an owner dead. Another's lease counts as expired once it expired
// by the earliest the database's clock may read (dbEarliest).
func (s *sqlStore) ownerLive(owner string, lease time.Time, hasLease bool, now time.Time) bool {
	now = s.dbEarliest(now)
	if hasLease && !lease.After(now) && s.lease.blind(now) {
		return owner == s.owner || !onThisHost(owner) || s.alive(owner)
	}
	return ownerLive(owner, s.owner, lease, hasLease, now, s.alive)
}

// Heartbeat registers or renews this process's lease. One upsert does it,
// so that concurrent heartbeats of one owner cannot lose a renewal; the
// previous expiry is read first, in the same transaction, to tell a lapse.
func (s *sqlStore) Heartbeat(ctx context.Context, ttl time.Duration) (Replica, error) {
	if ttl <= 0 {
		return Replica{}, fmt.Errorf("heartbeat of %s: ttl must be positive, got %s", s.owner, ttl)
	}
	var (
		r      Replica
		lapsed *LeaseLapsedError
	)
	err := s.write(ctx, func(tx querier) error {
		// Every renewal measures the database's clock afresh, in its own
		// transaction, before it reads the time the lease runs from.
		if err := s.syncClock(ctx, tx); err != nil {
			return err
		}
		now := s.clock()
		r, lapsed = Replica{Owner: s.owner, Since: now, Renewed: now, Expires: now.Add(ttl)}, nil
		var since, expires int64
		err := tx.QueryRowContext(ctx, `SELECT since, expires_at FROM replicas WHERE owner = ?`+tx.dialect().forUpdate, s.owner).
			Scan(&since, &expires)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			if _, err := tx.ExecContext(ctx, `INSERT INTO replicas (owner, since, renewed_at, expires_at) VALUES (?, ?, ?, ?)
				ON CONFLICT (owner) DO UPDATE SET renewed_at = excluded.renewed_at, expires_at = excluded.expires_at`,
				s.owner, now.UnixNano(), now.UnixNano(), r.Expires.UnixNano()); err != nil {
				return err
			}
			return nil
		case err != nil:
			return err
		}
		r.Since = time.Unix(0, since).UTC()
		if prev := time.Unix(0, expires).UTC(); !prev.After(s.dbLatest(now)) {
			lapsed = &LeaseLapsedError{Owner: s.owner, Expired: prev, Renewed: now}
		}
		_, err = tx.ExecContext(ctx, `UPDATE replicas SET renewed_at = ?, expires_at = ? WHERE owner = ?`,
			now.UnixNano(), r.Expires.UnixNano(), s.owner)
		return err
	})
	if err != nil {
		s.lease.failed()
		return Replica{}, fmt.Errorf("heartbeat of %s: %w", s.owner, err)
	}
	s.lease.renewed(r, ttl, lapsed != nil)
	if lapsed != nil {
		return r, lapsed
	}
	return r, nil
}

// Resign expires this process's lease now. A process that never
// registered has nothing to give up.
func (s *sqlStore) Resign(ctx context.Context) error {
	now := s.clock()
	err := s.write(ctx, func(tx querier) error {
		_, err := tx.ExecContext(ctx, `UPDATE replicas SET expires_at = ? WHERE owner = ? AND expires_at > ?`,
			now.UnixNano(), s.owner, now.UnixNano())
		return err
	})
	if err != nil {
		return fmt.Errorf("resign lease of %s: %w", s.owner, err)
	}
	return nil
}

// ListReplicas returns every lease on record.
func (s *sqlStore) ListReplicas(ctx context.Context) ([]Replica, error) {
	rows, err := s.read().QueryContext(ctx, `SELECT owner, since, renewed_at, expires_at FROM replicas ORDER BY since, owner`)
	if err != nil {
		return nil, fmt.Errorf("list replicas: %w", err)
	}
	defer func() { _ = rows.Close() }() // rows.Err reports how reading went
	var out []Replica
	for rows.Next() {
		var (
			r                       Replica
			since, renewed, expires int64
		)
		if err := rows.Scan(&r.Owner, &since, &renewed, &expires); err != nil {
			return nil, fmt.Errorf("list replicas: %w", err)
		}
		r.Since, r.Renewed, r.Expires = time.Unix(0, since).UTC(), time.Unix(0, renewed).UTC(), time.Unix(0, expires).UTC()
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list replicas: %w", err)
	}
	return out, nil
}

// leases reads every replica's lease expiry, inside a recovery
// transaction, and deletes the leases that expired long ago.
func leases(ctx context.Context, tx querier, now time.Time) (map[string]time.Time, error) {
	if _, err := tx.ExecContext(ctx, `DELETE FROM replicas WHERE expires_at < ?`, now.Add(-replicaPruneAfter).UnixNano()); err != nil {
		return nil, fmt.Errorf("prune replicas: %w", err)
	}
	rows, err := tx.QueryContext(ctx, `SELECT owner, expires_at FROM replicas`)
	if err != nil {
		return nil, fmt.Errorf("read replicas: %w", err)
	}
	defer func() { _ = rows.Close() }() // rows.Err reports how reading went
	out := map[string]time.Time{}
	for rows.Next() {
		var (
			owner   string
			expires int64
		)
		if err := rows.Scan(&owner, &expires); err != nil {
			return nil, fmt.Errorf("read replicas: %w", err)
		}
		out[owner] = time.Unix(0, expires).UTC()
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read replicas: %w", err)
	}
	return out, nil
}

// ownerLive decides whether the owner of a row still runs, as recovery
// sees it. An owner with a lease is alive while the lease is unexpired,
// which every process sharing the database agrees on whatever its host;
// only when the owner is a process on this host that is gone (its pid
// no longer runs with its start time) is it dead at once, so that a
// restart on one host recovers at once what the crashed process left.
// An owner that never took a lease (a process of an older version, or a
// test playing processes) is judged by alive, the host-local check.
func ownerLive(owner, self string, lease time.Time, hasLease bool, now time.Time, alive func(string) bool) bool {
	if owner == self {
		return true
	}
	if !hasLease {
		return alive(owner)
	}
	if !lease.After(now) {
		return false
	}
	return !onThisHost(owner) || alive(owner)
}

// onThisHost reports whether owner names a process ("host/pid/start") on
// this host, whose liveness a PID check can prove.
func onThisHost(owner string) bool {
	host, _, ok := strings.Cut(owner, "/")
	if !ok || strings.Count(owner, "/") != 2 {
		return false
	}
	h, _ := os.Hostname()
	return host == h
}

// KeepAlive renews the lease of st's process every interval for ttl, from
// now until ctx ends, and then resigns it (under a timeout of its own,
// since ctx is over by then). A failed renewal is logged and retried at
// the next beat: the lease is ttl long so that one miss costs nothing.
// renewed, when set, is called after each renewal that succeeded with the
// local time until which the lease surely holds: the renewal's start plus
// ttl, on this process's monotonic clock, so that no clock skew moves it
// later than the expiry the database recorded.
func KeepAlive(ctx context.Context, st Replicas, interval, ttl time.Duration, log *slog.Logger, renewed func(until time.Time)) {
	renew := func() {
		cctx, cancel := context.WithTimeoutCause(ctx, interval, errors.New("renewing the replica lease took longer than the heartbeat interval"))
		defer cancel()
		started := time.Now()
		_, err := st.Heartbeat(cctx, ttl)
		var lapsed *LeaseLapsedError
		switch {
		case errors.As(err, &lapsed):
			log.Warn("replica lease had lapsed; renewed", "err", err)
		case err != nil:
			if ctx.Err() == nil {
				log.Warn("replica lease not renewed", "err", err)
			}
			return
		}
		if renewed != nil {
			renewed(started.Add(ttl))
		}
	}
	renew()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			rctx, cancel := context.WithTimeoutCause(context.WithoutCancel(ctx), 5*time.Second, errors.New("resigning the replica lease took too long"))
			defer cancel()
			if err := st.Resign(rctx); err != nil {
				log.Warn("replica lease not resigned; it expires on its own", "err", err)
			}
			return
		case <-tick.C:
			renew()
		}
	}
}
