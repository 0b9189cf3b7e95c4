package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// WorkState is where an accepted trigger is: pending until a worker claims
// it, started while its run goes, done after.
type WorkState string

const (
	WorkPending WorkState = "pending"
	WorkStarted WorkState = "started"
	WorkDone    WorkState = "done"
)

// Work is an accepted trigger: which runbook to run with which params.
type Work struct {
	ID string `json:"id"`
	// Key makes Enqueue idempotent: a Slack event_id, an alert's
	// TriggerKey. Empty means no dedup.
	Key         string            `json:"key,omitempty"`
	Trigger     Trigger           `json:"trigger"`
	Runbook     string            `json:"runbook"`
	Params      map[string]string `json:"params,omitempty"`
	RequestedBy string            `json:"requested_by"`
	// Payload is what the trigger carried (the alert, the Slack command),
	// kept for the run and for replies.
	Payload json.RawMessage `json:"payload,omitempty"`
	State   WorkState       `json:"state"`
	// Attempts counts claims; more than one means a process died with it.
	Attempts   int       `json:"attempts"`
	RunID      string    `json:"run_id,omitempty"`
	Owner      string    `json:"owner,omitempty"`
	EnqueuedAt time.Time `json:"enqueued_at"`
	StartedAt  time.Time `json:"started_at,omitzero"`
	DoneAt     time.Time `json:"done_at,omitzero"`
}

// MaxWorkAttempts is how many times work is claimed before a restart gives
// up on it: work whose run was cut short by a dying process three times may
// be what kills the process, and is not fed to a fourth.
const MaxWorkAttempts = 3

const workColumns = `id, dedup_key, trigger_type, runbook, params, requested_by, payload, state, attempts, run_id, owner,
	enqueued_at, started_at, done_at`

func scanWork(row interface{ Scan(...any) error }) (Work, error) {
	var (
		w                       Work
		key, payload            sql.NullString
		params                  string
		enqueued, started, done sql.NullInt64
	)
	if err := row.Scan(&w.ID, &key, &w.Trigger, &w.Runbook, &params, &w.RequestedBy, &payload, &w.State, &w.Attempts,
		&w.RunID, &w.Owner, &enqueued, &started, &done); err != nil {
		return Work{}, err
	}
	if err := decodeParams(params, &w.Params); err != nil {
		return Work{}, fmt.Errorf("decode params of work %s: %w", w.ID, err)
	}
	w.Key, w.Payload = key.String, rawJSON(payload)
	w.EnqueuedAt, w.StartedAt, w.DoneAt = fromNanos(enqueued), fromNanos(started), fromNanos(done)
	return w, nil
}

// Enqueue adds pending work unless work with the same Key exists.
func (s *sqlStore) Enqueue(ctx context.Context, w Work) (Work, bool, error) {
	if w.Runbook == "" || !w.Trigger.Valid() {
		return Work{}, false, fmt.Errorf("enqueue work: a runbook and a valid trigger are required (got %q, %q)", w.Runbook, w.Trigger)
	}
	if err := checkJSON("payload", w.Payload); err != nil {
		return Work{}, false, fmt.Errorf("enqueue work: %w", err)
	}
	params := []byte("{}")
	if w.Params != nil {
		var err error
		if params, err = json.Marshal(w.Params); err != nil {
			return Work{}, false, fmt.Errorf("enqueue work: encode params: %w", err)
		}
	}
	now := s.clock()
	w.State, w.Attempts, w.RunID, w.Owner = WorkPending, 0, "", ""
	w.EnqueuedAt, w.StartedAt, w.DoneAt = now, time.Time{}, time.Time{}
	created := false
	for attempt := 0; ; attempt++ {
		w.ID = newID("w", now)
		err := s.write(ctx, func(tx querier) error {
			res, err := tx.ExecContext(ctx, `INSERT INTO work (`+workColumns+`) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)
				ON CONFLICT (dedup_key) DO NOTHING`,
				w.ID, nullString(w.Key), w.Trigger, w.Runbook, string(params), w.RequestedBy, jsonText(w.Payload),
				w.State, 0, "", "", now.UnixNano(), nil, nil)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 0 {
				created = false
				w, err = scanWork(tx.QueryRowContext(ctx, `SELECT `+workColumns+` FROM work WHERE dedup_key = ?`, w.Key))
				return err
			}
			created = true
			return appendAudit(ctx, tx, AuditEvent{At: now, Kind: AuditWorkEnqueued, Actor: w.RequestedBy,
				Detail: mustJSON(map[string]any{"work": w.ID, "key": w.Key, "runbook": w.Runbook, "trigger": w.Trigger})})
		})
		if isUniqueViolation(err) && attempt < 5 {
			continue
		}
		if err != nil {
			return Work{}, false, fmt.Errorf("enqueue work for %s: %w", w.Runbook, err)
		}
		return w, created, nil
	}
}

// ClaimWork moves the oldest pending work to started, owned by this process.
// On PostgreSQL the pick skips rows other claimers have locked, so claimers
// in several processes each take a different item at once; the UPDATE
// re-checks state = 'pending' on the row it locks either way, so a row
// claimed by a transaction that committed meanwhile is never claimed again.
func (s *sqlStore) ClaimWork(ctx context.Context) (Work, error) {
	now := s.clock()
	if err := s.claimable(now); err != nil {
		return Work{}, fmt.Errorf("claim work: %w", err)
	}
	var w Work
	err := s.write(ctx, func(tx querier) error {
		var err error
		w, err = scanWork(tx.QueryRowContext(ctx, `UPDATE work SET state = 'started', attempts = attempts + 1, owner = ?, started_at = ?
			WHERE state = 'pending' AND id = (SELECT id FROM work WHERE state = 'pending' ORDER BY enqueued_at, id LIMIT 1`+tx.dialect().skipLocked+`)
			RETURNING `+workColumns, s.owner, now.UnixNano()))
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNoWork
		}
		if err != nil {
			return err
		}
		return auditWork(ctx, tx, now, w, WorkPending)
	})
	if inDoubt(err) {
		// The claim may have committed with nobody to run it: the work
		// would stay started, owned by this live process, for good. Its
		// owner and start time name it; the next sweep hands it back.
		s.claimsInDoubt.Lock()
		s.claimsInDoubt.at = append(s.claimsInDoubt.at, now.UnixNano())
		s.claimsInDoubt.Unlock()
	}
	if err != nil {
		return Work{}, fmt.Errorf("claim work: %w", err)
	}
	return w, nil
}

func auditWork(ctx context.Context, tx querier, now time.Time, w Work, from WorkState) error {
	return appendAudit(ctx, tx, AuditEvent{At: now, RunID: w.RunID, Kind: AuditWorkState, Actor: w.Owner,
		Detail: mustJSON(map[string]any{"work": w.ID, "from": from, "to": w.State, "attempts": w.Attempts})})
}

// CompleteWork moves started work to done. Only the process that claimed
// it may: one whose lease lapsed (a partition, a failover longer than the
// lease) may find its work requeued and claimed by another replica, which
// runs it now; that one completes it.
func (s *sqlStore) CompleteWork(ctx context.Context, id string) (Work, error) {
	now := s.clock()
	var w Work
	err := s.write(ctx, func(tx querier) error {
		var err error
		w, err = scanWork(tx.QueryRowContext(ctx, `UPDATE work SET state = 'done', done_at = ?
			WHERE id = ? AND state = 'started' AND owner = ? RETURNING `+workColumns, now.UnixNano(), id, s.owner))
		if errors.Is(err, sql.ErrNoRows) {
			var got, owner string
			if err := tx.QueryRowContext(ctx, `SELECT state, owner FROM work WHERE id = ?`, id).Scan(&got, &owner); err != nil {
				return notFound(err)
			}
			want := string(WorkStarted)
			if got == want {
				want, got = want+" by "+s.owner, got+" by "+owner
			}
			return &StateConflictError{Kind: "work", ID: id, Want: want, Got: got}
		}
		if err != nil {
			return err
		}
		return auditWork(ctx, tx, now, w, WorkStarted)
	})
	if err != nil {
		return Work{}, fmt.Errorf("complete work %s: %w", id, err)
	}
	return w, nil
}

// ReturnWork moves started work back to pending when its run was never
// recorded: recording the run is the first thing a worker does, before it
// runs a step, so the work's attempt did nothing and is uncounted. A run
// row of it that this process holds running is one whose creation failed
// only as far as the worker could tell (the commit went through, its
// answer was lost): nothing ran under it, so it is withdrawn (deleted,
// with an audit entry saying why). Were it kept, history would show two
// runs for one alert, and ended interrupted it would read as a run cut
// short. A row that somehow has a plan is never deleted; it ends
// interrupted instead.
func (s *sqlStore) ReturnWork(ctx context.Context, id string) (Work, error) {
	now := s.clock()
	var w Work
	err := s.write(ctx, func(tx querier) error {
		var claimed int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM work WHERE id = ? AND state = 'started' AND owner = ?`, id, s.owner).Scan(&claimed); err != nil {
			return err
		}
		if claimed == 1 {
			if err := withdrawStrayRuns(ctx, tx, now, id, s.owner); err != nil {
				return err
			}
		}
		var err error
		w, err = scanWork(tx.QueryRowContext(ctx, `UPDATE work SET state = 'pending', attempts = attempts - 1, owner = '', started_at = NULL
			WHERE id = ? AND state = 'started' AND owner = ? AND NOT EXISTS (SELECT 1 FROM runs WHERE work_id = ? AND status = 'running')
			RETURNING `+workColumns, id, s.owner, id))
		if errors.Is(err, sql.ErrNoRows) {
			var got, owner string
			if err := tx.QueryRowContext(ctx, `SELECT state, owner FROM work WHERE id = ?`, id).Scan(&got, &owner); err != nil {
				return notFound(err)
			}
			return &StateConflictError{Kind: "work", ID: id, Want: string(WorkStarted) + " by " + s.owner + " with no run",
				Got: got + " by " + cmp.Or(owner, "nobody")}
		}
		if err != nil {
			return err
		}
		by := w
		by.Owner = s.owner
		return auditWork(ctx, tx, now, by, WorkStarted)
	})
	if err != nil {
		return Work{}, fmt.Errorf("return work %s to the queue: %w", id, err)
	}
	return w, nil
}

// withdrawStrayRuns deletes the running run rows of work id held by owner
// (see ReturnWork), or ends interrupted one that has a plan.
func withdrawStrayRuns(ctx context.Context, tx querier, now time.Time, id, owner string) error {
	stray, err := ownedRows(ctx, tx, `SELECT id, owner FROM runs WHERE work_id = ? AND owner = ? AND status = 'running'`, id, owner)
	if err != nil {
		return err
	}
	for _, r := range stray {
		kind, why := AuditRunWithdrawn, "its creation was not confirmed; nothing ran; its work went back to the queue"
		res, err := tx.ExecContext(ctx, `DELETE FROM runs WHERE id = ? AND status = 'running' AND NOT EXISTS (SELECT 1 FROM plans WHERE run_id = ?)`, r.id, r.id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			kind, why = AuditRunInterrupted, "its creation was not confirmed"
			if _, err := tx.ExecContext(ctx, `UPDATE runs SET status = 'interrupted', finished_at = ? WHERE id = ? AND status = 'running'`,
				now.UnixNano(), r.id); err != nil {
				return err
			}
		} else if _, err := tx.ExecContext(ctx, `UPDATE work SET run_id = '' WHERE id = ? AND run_id = ?`, id, r.id); err != nil {
			return err
		}
		if err := appendAudit(ctx, tx, AuditEvent{At: now, RunID: r.id, Kind: kind, Actor: owner,
			Detail: mustJSON(map[string]any{"owner": r.owner, "why": why})}); err != nil {
			return err
		}
	}
	return nil
}

// GetWork returns one work item.
func (s *sqlStore) GetWork(ctx context.Context, id string) (Work, error) {
	w, err := scanWork(s.read().QueryRowContext(ctx, `SELECT `+workColumns+` FROM work WHERE id = ?`, id))
	if err != nil {
		return Work{}, fmt.Errorf("get work %s: %w", id, notFound(err))
	}
	return w, nil
}
