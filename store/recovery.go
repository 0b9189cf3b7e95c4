package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Recovery is what MarkInterrupted changed.
type Recovery struct {
	// Runs went from running to interrupted.
	Runs []string `json:"runs,omitempty"`
	// Plans went from applying or verifying to interrupted. They are never
	// resumed: the target may be half-changed, so a human looks, and a new
	// run proposes a new plan that needs a new approval.
	Plans []string `json:"plans,omitempty"`
	// Requeued work went from started back to pending: it had not
	// finished, and running a diagnosis again is safe.
	Requeued []string `json:"requeued,omitempty"`
	// Abandoned work went from started to done because it had been claimed
	// maxAttempts times: it may be what kills the process.
	Abandoned []string `json:"abandoned,omitempty"`
}

// Empty reports whether nothing needed recovery.
func (r Recovery) Empty() bool {
	return len(r.Runs)+len(r.Plans)+len(r.Requeued)+len(r.Abandoned) == 0
}

// MarkInterrupted recovers what a dead process left behind. Rows owned by a
// process that still runs (this one, or a concurrent `runbot run`) are left
// alone, so a restarting server does not interrupt a CLI run beside it.
func (s *SQLite) MarkInterrupted(ctx context.Context) (Recovery, error) {
	now := s.clock()
	var rec Recovery
	alive := map[string]bool{}
	dead := func(owner string) bool {
		a, ok := alive[owner]
		if !ok {
			a = ownerAlive(owner)
			alive[owner] = a
		}
		return !a
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		rec = Recovery{}
		runs, err := ownedRows(ctx, tx, `SELECT id, owner FROM runs WHERE status = 'running' ORDER BY id`)
		if err != nil {
			return err
		}
		for _, r := range runs {
			if !dead(r.owner) {
				continue
			}
			if _, err := tx.ExecContext(ctx, `UPDATE runs SET status = 'interrupted', finished_at = ? WHERE id = ? AND status = 'running'`,
				now.UnixNano(), r.id); err != nil {
				return err
			}
			if err := appendAudit(ctx, tx, AuditEvent{At: now, RunID: r.id, Kind: AuditRunInterrupted, Actor: "runbot",
				Detail: mustJSON(map[string]any{"owner": r.owner})}); err != nil {
				return err
			}
			rec.Runs = append(rec.Runs, r.id)
		}

		type planRow struct {
			owned
			state PlanState
		}
		rows, err := tx.QueryContext(ctx, `SELECT id, owner, state FROM plans WHERE state IN ('applying', 'verifying') ORDER BY id`)
		if err != nil {
			return err
		}
		var plans []planRow
		for rows.Next() {
			var p planRow
			if err := rows.Scan(&p.id, &p.owner, &p.state); err != nil {
				_ = rows.Close() // the scan error is the one to report
				return err
			}
			plans = append(plans, p)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		if err := rows.Err(); err != nil {
			return err
		}
		for _, p := range plans {
			if !dead(p.owner) {
				continue
			}
			if _, err := transition(ctx, tx, now, Transition{PlanID: p.id, From: p.state, To: PlanInterrupted, Actor: "runbot",
				Detail: mustJSON(map[string]any{"owner": p.owner})}); err != nil {
				return err
			}
			rec.Plans = append(rec.Plans, p.id)
		}

		work, err := ownedRows(ctx, tx, `SELECT id, owner FROM work WHERE state = 'started' ORDER BY id`)
		if err != nil {
			return err
		}
		for _, w := range work {
			if !dead(w.owner) {
				continue
			}
			if err := recoverWork(ctx, tx, now, w.id, &rec); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return Recovery{}, fmt.Errorf("mark interrupted: %w", err)
	}
	return rec, nil
}

type owned struct{ id, owner string }

func ownedRows(ctx context.Context, tx *sql.Tx, q string) ([]owned, error) {
	rows, err := tx.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }() // rows.Err reports how reading went
	var out []owned
	for rows.Next() {
		var o owned
		if err := rows.Scan(&o.id, &o.owner); err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, rows.Err()
}

func recoverWork(ctx context.Context, tx *sql.Tx, now time.Time, id string, rec *Recovery) error {
	w, err := scanWork(tx.QueryRowContext(ctx, `SELECT `+workColumns+` FROM work WHERE id = ?`, id))
	if err != nil {
		return err
	}
	from := w.State
	if w.Attempts >= maxAttempts {
		w.State, w.DoneAt = WorkDone, now
		rec.Abandoned = append(rec.Abandoned, id)
	} else {
		w.State, w.StartedAt = WorkPending, time.Time{}
		rec.Requeued = append(rec.Requeued, id)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE work SET state = ?, owner = '', started_at = ?, done_at = ? WHERE id = ?`,
		w.State, nanos(w.StartedAt), nanos(w.DoneAt), id); err != nil {
		return err
	}
	w.Owner = "runbot"
	return auditWork(ctx, tx, now, w, from)
}
