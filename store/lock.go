package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Lock is a held lease. Token identifies this acquisition: a holder that
// lost the lease (it expired and someone else took it) cannot release or
// refresh the new holder's lock, even under the same holder name.
type Lock struct {
	Key     string    `json:"key"`
	Holder  string    `json:"holder"`
	Token   string    `json:"-"`
	Since   time.Time `json:"since"`
	Expires time.Time `json:"expires"`
}

// Acquire takes the lock on key for ttl, owned by this process: when the
// process dies, MarkInterrupted releases it with the process's plans. The
// lock is not reentrant: while
// any unexpired lease exists, every Acquire (even by the same holder name)
// gets a *LockedError. One INSERT ... ON CONFLICT DO UPDATE ... WHERE expired
// statement takes a free or expired lock, so two processes racing for it
// cannot both win.
func (s *sqlStore) Acquire(ctx context.Context, key, holder string, ttl time.Duration) (Lock, error) {
	if key == "" || holder == "" || ttl <= 0 {
		return Lock{}, errors.New("acquire lock: key, holder and a positive ttl are required")
	}
	now := s.clock()
	if err := s.claimable(now); err != nil {
		return Lock{}, fmt.Errorf("acquire lock %s for %s: %w", key, holder, err)
	}
	l := Lock{Key: key, Holder: holder, Token: newToken(), Since: now, Expires: now.Add(ttl)}
	// Another's lock is taken over once it expired by the earliest the
	// database's clock may read.
	expired := s.dbEarliest(now).UnixNano()
	err := s.write(ctx, func(tx querier) error {
		var prev sql.NullString
		// The previous holder of an expired lock, read in the same
		// transaction, goes into the audit entry: a lease taken over is
		// worth knowing about.
		err := tx.QueryRowContext(ctx, `SELECT holder FROM locks WHERE key = ? AND expires_at <= ?`, key, expired).Scan(&prev)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO locks (key, holder, token, since, expires_at, owner) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (key) DO UPDATE SET holder = excluded.holder, token = excluded.token,
				since = excluded.since, expires_at = excluded.expires_at, owner = excluded.owner
			WHERE locks.expires_at <= ?`,
			key, holder, l.Token, now.UnixNano(), l.Expires.UnixNano(), s.owner, expired)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			var held Lock
			var since, expires sql.NullInt64
			if err := tx.QueryRowContext(ctx, `SELECT holder, since, expires_at FROM locks WHERE key = ?`, key).
				Scan(&held.Holder, &since, &expires); err != nil {
				return err
			}
			return &LockedError{Key: key, Holder: held.Holder, Since: fromNanos(since), Expires: fromNanos(expires)}
		}
		detail := map[string]any{"key": key, "holder": holder, "expires": l.Expires}
		if prev.Valid {
			detail["expired_holder"] = prev.String
		}
		return appendAudit(ctx, tx, AuditEvent{At: now, Kind: AuditLockAcquired, Actor: holder, Detail: mustJSON(detail)})
	})
	if err != nil {
		return Lock{}, fmt.Errorf("acquire lock %s for %s: %w", key, holder, err)
	}
	return l, nil
}

// Refresh extends a lock that is still held under l's token. A lease that
// expired but was not taken over is still ours and is extended.
func (s *sqlStore) Refresh(ctx context.Context, l Lock, ttl time.Duration) (Lock, error) {
	if ttl <= 0 {
		return Lock{}, errors.New("refresh lock: ttl must be positive")
	}
	now := s.clock()
	expires := now.Add(ttl)
	err := s.write(ctx, func(tx querier) error {
		res, err := tx.ExecContext(ctx, `UPDATE locks SET expires_at = ? WHERE key = ? AND token = ?`,
			expires.UnixNano(), l.Key, l.Token)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrLockLost
		}
		return nil
	})
	if err != nil {
		return Lock{}, fmt.Errorf("refresh lock %s for %s: %w", l.Key, l.Holder, err)
	}
	l.Expires = expires
	return l, nil
}

// Release gives up a lock held under l's token.
func (s *sqlStore) Release(ctx context.Context, l Lock) error {
	now := s.clock()
	err := s.write(ctx, func(tx querier) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM locks WHERE key = ? AND token = ?`, l.Key, l.Token)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrLockLost
		}
		return appendAudit(ctx, tx, AuditEvent{At: now, Kind: AuditLockReleased, Actor: l.Holder,
			Detail: mustJSON(map[string]any{"key": l.Key, "holder": l.Holder})})
	})
	if err != nil {
		return fmt.Errorf("release lock %s for %s: %w", l.Key, l.Holder, err)
	}
	return nil
}
