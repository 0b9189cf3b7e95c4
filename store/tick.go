package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// TickState is what became of one tick of a schedule.
type TickState string

const (
	// TickClaimed: a process runs the tick's audit (or died doing so).
	TickClaimed TickState = "claimed"
	// TickDone: the tick's audit ran to its end (whatever its outcome).
	TickDone TickState = "done"
	// TickSkipped: the tick was not run on purpose (the schedule's
	// previous audit was still going).
	TickSkipped TickState = "skipped"
	// TickMissed: nobody ran the tick, and it was found too late to be
	// caught up; it is recorded so that the gap is known.
	TickMissed TickState = "missed"
)

// AuditTickClaimed is the audit kind of a tick claimed, taken over,
// skipped or recorded as missed; its detail names the schedule, the tick
// and how it was claimed.
const AuditTickClaimed = "schedule.tick"

// Tick is one firing of a schedule, across every process sharing the
// store: the row whose insert decides which process runs it.
type Tick struct {
	Schedule string    `json:"schedule"`
	At       time.Time `json:"at"`
	State    TickState `json:"state"`
	Owner    string    `json:"owner"`
	// CatchUp is set when the tick was run late: its claimer died, or
	// nobody claimed it in time.
	CatchUp bool `json:"catch_up,omitempty"`
	// TakenOverFrom names the dead claimer a catch-up took the tick from.
	TakenOverFrom string    `json:"taken_over_from,omitempty"`
	RunID         string    `json:"run_id,omitempty"`
	ClaimedAt     time.Time `json:"claimed_at"`
	DoneAt        time.Time `json:"done_at,omitzero"`
}

// TickClaim asks to claim one tick.
type TickClaim struct {
	Schedule string
	At       time.Time
	// State is TickClaimed (the default) to run the tick, TickSkipped or
	// TickMissed to record that it is not run.
	State TickState
	// CatchUp claims a tick late: only when the schedule has an earlier
	// tick on record (it was being served, so the gap is a miss, not a
	// new schedule), and also from a claimer that died (its lease
	// expired) without finishing it.
	CatchUp bool
}

// ScheduleTicks are the per-tick claims that make a schedule fire once per
// tick across every process sharing the store.
type ScheduleTicks interface {
	// ClaimTick claims a tick for this process. Of several processes
	// claiming one tick, exactly one gets it; the others get a
	// *TickClaimedError naming the holder. A catch-up claim (c.CatchUp)
	// also takes over a tick still claimed by a dead process, and gets
	// ErrNothingToCatchUp for a schedule with no earlier tick on record.
	ClaimTick(ctx context.Context, c TickClaim) (Tick, error)
	// FinishTick moves a tick this process claimed to done, with the run
	// that carried it out.
	FinishTick(ctx context.Context, schedule string, at time.Time, runID string) (Tick, error)
	// Ticks returns a schedule's ticks, newest first, at most limit (0
	// means 100).
	Ticks(ctx context.Context, schedule string, limit int) ([]Tick, error)
}

// ErrNothingToCatchUp says that a catch-up claim found no earlier tick of
// the schedule: a schedule new to the cluster has missed nothing.
var ErrNothingToCatchUp = errors.New("nothing to catch up: the schedule has no earlier tick on record")

// TickClaimedError says that a tick was claimed already, by Owner.
type TickClaimedError struct {
	Schedule string
	At       time.Time
	Owner    string
	State    TickState
}

func (e *TickClaimedError) Error() string {
	return fmt.Sprintf("tick %s of schedule %q is %s by %s", e.At.Format(time.RFC3339), e.Schedule, e.State, e.Owner)
}

const tickColumns = `schedule, tick, state, owner, catch_up, taken_over_from, run_id, claimed_at, done_at`

func scanTick(row interface{ Scan(...any) error }) (Tick, error) {
	var (
		t           Tick
		at, claimed int64
		catchUp     int
		from, run   sql.NullString
		done        sql.NullInt64
	)
	if err := row.Scan(&t.Schedule, &at, &t.State, &t.Owner, &catchUp, &from, &run, &claimed, &done); err != nil {
		return Tick{}, err
	}
	t.At, t.ClaimedAt, t.DoneAt = time.Unix(0, at).UTC(), time.Unix(0, claimed).UTC(), fromNanos(done)
	t.CatchUp, t.TakenOverFrom, t.RunID = catchUp != 0, from.String, run.String
	return t, nil
}

// ClaimTick claims a tick. The schedule's name is locked for the
// transaction (an advisory lock on PostgreSQL), so that a catch-up's
// "is there an earlier tick" and its insert are one decision; the
// primary key (schedule, tick) makes the claim itself exclusive.
func (s *sqlStore) ClaimTick(ctx context.Context, c TickClaim) (Tick, error) {
	if c.State == "" {
		c.State = TickClaimed
	}
	if c.Schedule == "" || c.At.IsZero() || (c.State != TickClaimed && c.State != TickSkipped && c.State != TickMissed) {
		return Tick{}, fmt.Errorf("claim tick: a schedule, a tick time and a state of claimed, skipped or missed are required (got %q, %s, %q)",
			c.Schedule, c.At, c.State)
	}
	now := s.clock()
	at := c.At.UTC()
	if c.State == TickClaimed {
		if err := s.claimable(now); err != nil {
			return Tick{}, fmt.Errorf("claim tick %s of schedule %q: %w", at.Format(time.RFC3339), c.Schedule, err)
		}
	}
	t := Tick{Schedule: c.Schedule, At: at, State: c.State, Owner: s.owner, CatchUp: c.CatchUp, ClaimedAt: now}
	if c.State == TickMissed {
		t.DoneAt = now
	}
	err := s.write(ctx, func(tx querier) error {
		t.TakenOverFrom = ""
		if err := lockKey(ctx, tx, "runbot.tick/"+c.Schedule); err != nil {
			return err
		}
		held, err := scanTick(tx.QueryRowContext(ctx, `SELECT `+tickColumns+` FROM schedule_ticks WHERE schedule = ? AND tick = ?`+
			tx.dialect().forUpdate, c.Schedule, at.UnixNano()))
		switch {
		case errors.Is(err, sql.ErrNoRows):
			if c.CatchUp {
				var n int
				if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT 1 FROM schedule_ticks WHERE schedule = ? AND tick < ? LIMIT 1) AS earlier`,
					c.Schedule, at.UnixNano()).Scan(&n); err != nil {
					return err
				}
				if n == 0 {
					return ErrNothingToCatchUp
				}
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO schedule_ticks (`+tickColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				t.Schedule, at.UnixNano(), t.State, t.Owner, boolInt(t.CatchUp), nil, nil, now.UnixNano(), nanos(t.DoneAt)); err != nil {
				return err
			}
		case err != nil:
			return err
		default:
			dead, err := s.tickOwnerDead(ctx, tx, held.Owner, now)
			if err != nil {
				return err
			}
			if !c.CatchUp || c.State != TickClaimed || held.State != TickClaimed || !dead {
				return &TickClaimedError{Schedule: c.Schedule, At: at, Owner: held.Owner, State: held.State}
			}
			t.CatchUp, t.TakenOverFrom = true, held.Owner
			if _, err := tx.ExecContext(ctx, `UPDATE schedule_ticks SET owner = ?, catch_up = 1, taken_over_from = ?, claimed_at = ?
				WHERE schedule = ? AND tick = ? AND state = 'claimed' AND owner = ?`,
				s.owner, held.Owner, now.UnixNano(), c.Schedule, at.UnixNano(), held.Owner); err != nil {
				return err
			}
		}
		detail := map[string]any{"schedule": t.Schedule, "tick": t.At, "state": t.State, "owner": t.Owner}
		if t.CatchUp {
			detail["catch_up"] = true
		}
		if t.TakenOverFrom != "" {
			detail["taken_over_from"] = t.TakenOverFrom
		}
		return appendAudit(ctx, tx, AuditEvent{At: now, Kind: AuditTickClaimed, Actor: s.owner, Detail: mustJSON(detail)})
	})
	if err != nil {
		return Tick{}, fmt.Errorf("claim tick %s of schedule %q: %w", at.Format(time.RFC3339), c.Schedule, err)
	}
	return t, nil
}

// tickOwnerDead applies recovery's liveness rule (ownerLive) to the owner
// of one tick.
func (s *sqlStore) tickOwnerDead(ctx context.Context, tx querier, owner string, now time.Time) (bool, error) {
	var expires int64
	err := tx.QueryRowContext(ctx, `SELECT expires_at FROM replicas WHERE owner = ?`, owner).Scan(&expires)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return false, err
	}
	has := err == nil
	return !s.ownerLive(owner, time.Unix(0, expires).UTC(), has, now), nil
}

// FinishTick moves a tick this process claimed to done.
func (s *sqlStore) FinishTick(ctx context.Context, schedule string, at time.Time, runID string) (Tick, error) {
	now := s.clock()
	var t Tick
	err := s.write(ctx, func(tx querier) error {
		var err error
		t, err = scanTick(tx.QueryRowContext(ctx, `UPDATE schedule_ticks SET state = 'done', run_id = ?, done_at = ?
			WHERE schedule = ? AND tick = ? AND state = 'claimed' AND owner = ? RETURNING `+tickColumns,
			nullString(runID), now.UnixNano(), schedule, at.UTC().UnixNano(), s.owner))
		if errors.Is(err, sql.ErrNoRows) {
			held, err := scanTick(tx.QueryRowContext(ctx, `SELECT `+tickColumns+` FROM schedule_ticks WHERE schedule = ? AND tick = ?`,
				schedule, at.UTC().UnixNano()))
			if err != nil {
				return notFound(err)
			}
			return &TickClaimedError{Schedule: schedule, At: held.At, Owner: held.Owner, State: held.State}
		}
		return err
	})
	if err != nil {
		return Tick{}, fmt.Errorf("finish tick %s of schedule %q: %w", at.UTC().Format(time.RFC3339), schedule, err)
	}
	return t, nil
}

// Ticks returns a schedule's ticks, newest first.
func (s *sqlStore) Ticks(ctx context.Context, schedule string, limit int) ([]Tick, error) {
	if limit <= 0 {
		limit = 100
	}
	rows, err := s.read().QueryContext(ctx, `SELECT `+tickColumns+` FROM schedule_ticks WHERE schedule = ? ORDER BY tick DESC LIMIT ?`, schedule, limit)
	if err != nil {
		return nil, fmt.Errorf("list ticks of schedule %q: %w", schedule, err)
	}
	defer func() { _ = rows.Close() }() // rows.Err reports how reading went
	var out []Tick
	for rows.Next() {
		t, err := scanTick(rows)
		if err != nil {
			return nil, fmt.Errorf("list ticks of schedule %q: %w", schedule, err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list ticks of schedule %q: %w", schedule, err)
	}
	return out, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
