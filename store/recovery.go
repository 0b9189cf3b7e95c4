package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Recovery is what MarkInterrupted changed.
type Recovery struct {
	// Runs went from running to interrupted: the process died before the
	// run's report was stored.
	Runs []string `json:"runs,omitempty"`
	// Finished runs had their report stored before the process died: a
	// run left running with a final report was finished from it, and a run
	// that had already finished kept its status. Either way its result
	// stands and it is never run again; only its message may be out of
	// date.
	Finished []string `json:"finished,omitempty"`
	// Plans went from applying or verifying to interrupted. They are never
	// resumed: the target may be half-changed, so a human looks, and a new
	// run proposes a new plan that needs a new approval.
	Plans []string `json:"plans,omitempty"`
	// Requeued work went from started back to pending: its run had not
	// stored a report, and running a diagnosis again is safe.
	Requeued []string `json:"requeued,omitempty"`
	// Completed work went from started to done because its run had ended
	// (its report stored) before the process died: running it again would
	// post it again and propose a plan nobody asked for.
	Completed []string `json:"completed,omitempty"`
	// Abandoned work went from started to done because it had been claimed
	// MaxWorkAttempts times: it may be what kills the process.
	Abandoned []string `json:"abandoned,omitempty"`
	// Locks are the keys of locks a dead process held, released.
	Locks []string `json:"locks,omitempty"`
	// ChatMessages counts the chat messages a dead process had claimed to
	// deliver, released for the living.
	ChatMessages int `json:"chat_messages,omitempty"`
	// Unconfirmed work went from started back to pending, its attempt
	// uncounted: this process claimed it, but the claim's commit went
	// unanswered (the connection broke, as when the primary dies) and
	// committed all the same, so no worker of this process took it.
	Unconfirmed []string `json:"unconfirmed,omitempty"`
}

// Empty reports whether nothing needed recovery.
func (r Recovery) Empty() bool {
	return len(r.Runs)+len(r.Finished)+len(r.Plans)+len(r.Requeued)+len(r.Completed)+len(r.Abandoned)+len(r.Locks)+r.ChatMessages+
		len(r.Unconfirmed) == 0
}

// MarkInterrupted recovers what a dead process left behind. Rows owned by a
// process that still runs (this one, a replica whose lease is unexpired, or
// a concurrent `runbot run`) are left alone, so a restarting server does not
// interrupt a CLI run beside it, and a sweep in one replica does not
// interrupt another's work. Which owners are dead is decided by ownerLive.
func (s *sqlStore) MarkInterrupted(ctx context.Context) (Recovery, error) {
	now := s.clock()
	s.claimsInDoubt.Lock()
	doubts := slices.Clone(s.claimsInDoubt.at)
	s.claimsInDoubt.Unlock()
	var rec Recovery
	err := s.write(ctx, func(tx querier) error {
		// Two processes sweeping at once recover one after the other; the
		// rows read below are locked against everyone else's writes.
		if err := lockKey(ctx, tx, "runbot.recovery"); err != nil {
			return err
		}
		lease, err := leases(ctx, tx, now)
		if err != nil {
			return err
		}
		sw := &sweep{tx: tx, now: now, dead: s.deadOwners(lease, now)}
		for _, step := range []func(context.Context) error{sw.runs, sw.plans, sw.locks, sw.chatClaims, sw.work} {
			if err := step(ctx); err != nil {
				return err
			}
		}
		if err := s.handBack(ctx, tx, now, doubts, &sw.rec); err != nil {
			return err
		}
		rec = sw.rec
		return nil
	})
	if err != nil {
		return Recovery{}, fmt.Errorf("mark interrupted: %w", err)
	}
	// Forgotten only once handed back for sure; handing back again is a
	// no-op, should this commit have been in doubt too.
	s.claimsInDoubt.Lock()
	s.claimsInDoubt.at = slices.DeleteFunc(s.claimsInDoubt.at, func(at int64) bool { return slices.Contains(doubts, at) })
	s.claimsInDoubt.Unlock()
	return rec, nil
}

// handBack returns to the queue the work of this process's claims in doubt
// (ClaimWork) that did commit: the claim is the row started by this
// process at that instant. Its attempt is uncounted, since nothing ran. A
// claim that did not commit left no row; one that a sweep elsewhere
// recovered meanwhile (this process's lease had expired) is no longer
// started by this process. Two rows at one instant cannot be told apart
// (one may be running here), so neither is touched.
func (s *sqlStore) handBack(ctx context.Context, tx querier, now time.Time, doubts []int64, rec *Recovery) error {
	for _, at := range doubts {
		claimed, err := ownedRows(ctx, tx, `SELECT id, owner FROM work WHERE state = 'started' AND owner = ? AND started_at = ?`+
			tx.dialect().forUpdate, s.owner, at)
		if err != nil {
			return fmt.Errorf("hand back work claimed in doubt: %w", err)
		}
		if len(claimed) != 1 {
			continue
		}
		id := claimed[0].id
		w, err := scanWork(tx.QueryRowContext(ctx, `UPDATE work SET state = 'pending', attempts = attempts - 1, owner = '', started_at = NULL
			WHERE id = ? RETURNING `+workColumns, id))
		if err != nil {
			return fmt.Errorf("hand back work %s: %w", id, err)
		}
		w.Owner = "runbot"
		if err := auditWork(ctx, tx, now, w, WorkStarted); err != nil {
			return err
		}
		rec.Unconfirmed = append(rec.Unconfirmed, id)
	}
	return nil
}

// deadOwners returns whether an owner of rows is dead, by ownerLive,
// judging each owner once per sweep.
func (s *sqlStore) deadOwners(lease map[string]time.Time, now time.Time) func(owner string) bool {
	alive := map[string]bool{}
	return func(owner string) bool {
		a, ok := alive[owner]
		if !ok {
			expires, has := lease[owner]
			a = s.ownerLive(owner, expires, has, now)
			alive[owner] = a
		}
		return !a
	}
}

// sweep is one recovery pass, in one transaction: each step recovers one
// kind of row that dead processes left, and rec is what they changed.
type sweep struct {
	tx   querier
	now  time.Time
	dead func(owner string) bool
	rec  Recovery
}

// runs finishes a dead process's running runs: from their stored report
// when it was stored (the run ended; only its status was not written),
// as interrupted otherwise.
func (sw *sweep) runs(ctx context.Context) error {
	runs, err := runningRows(ctx, sw.tx)
	if err != nil {
		return err
	}
	for _, r := range runs {
		if !sw.dead(r.owner) {
			continue
		}
		if outcome, at, ok := finalReport(r.report); ok {
			// The report was stored; only the status was not: the run
			// ended, and recording it as interrupted would have it run
			// again.
			if _, err := sw.tx.ExecContext(ctx, `UPDATE runs SET status = ?, outcome = ?, finished_at = ? WHERE id = ? AND status = 'running'`,
				RunFinished, outcome, at.UnixNano(), r.id); err != nil {
				return err
			}
			if err := appendAudit(ctx, sw.tx, AuditEvent{At: sw.now, RunID: r.id, Kind: AuditRunFinished, Actor: "runbot",
				Detail: mustJSON(map[string]any{"status": RunFinished, "outcome": outcome, "recovered_from_report": true, "owner": r.owner})}); err != nil {
				return err
			}
			sw.rec.Finished = append(sw.rec.Finished, r.id)
			continue
		}
		if _, err := sw.tx.ExecContext(ctx, `UPDATE runs SET status = 'interrupted', finished_at = ? WHERE id = ? AND status = 'running'`,
			sw.now.UnixNano(), r.id); err != nil {
			return err
		}
		if err := appendAudit(ctx, sw.tx, AuditEvent{At: sw.now, RunID: r.id, Kind: AuditRunInterrupted, Actor: "runbot",
			Detail: mustJSON(map[string]any{"owner": r.owner})}); err != nil {
			return err
		}
		sw.rec.Runs = append(sw.rec.Runs, r.id)
	}
	return nil
}

// plans interrupts a dead process's plans that were applying or
// verifying; they are never resumed.
func (sw *sweep) plans(ctx context.Context) error {
	type planRow struct {
		owned
		state PlanState
	}
	rows, err := sw.tx.QueryContext(ctx, `SELECT id, owner, state FROM plans WHERE state IN ('applying', 'verifying') ORDER BY id`+
		sw.tx.dialect().forUpdate)
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
		if !sw.dead(p.owner) {
			continue
		}
		if _, err := transition(ctx, sw.tx, sw.now, Transition{PlanID: p.id, From: p.state, To: PlanInterrupted, Actor: "runbot",
			Detail: mustJSON(map[string]any{"owner": p.owner})}); err != nil {
			return err
		}
		sw.rec.Plans = append(sw.rec.Plans, p.id)
	}
	return nil
}

// locks releases a dead process's locks: its remediation was interrupted
// (plans), and a lock left to its own expiry would keep the deployment
// from a newly approved fix for up to half an hour.
func (sw *sweep) locks(ctx context.Context) error {
	locks, err := ownedRows(ctx, sw.tx, `SELECT key, owner FROM locks WHERE owner <> '' AND expires_at > ? ORDER BY key`+sw.tx.dialect().forUpdate,
		sw.now.UnixNano())
	if err != nil {
		return err
	}
	for _, l := range locks {
		if !sw.dead(l.owner) {
			continue
		}
		if _, err := sw.tx.ExecContext(ctx, `DELETE FROM locks WHERE key = ? AND owner = ?`, l.id, l.owner); err != nil {
			return err
		}
		if err := appendAudit(ctx, sw.tx, AuditEvent{At: sw.now, Kind: AuditLockReleased, Actor: "runbot",
			Detail: mustJSON(map[string]any{"key": l.id, "owner": l.owner, "recovered": true})}); err != nil {
			return err
		}
		sw.rec.Locks = append(sw.rec.Locks, l.id)
	}
	return nil
}

// chatClaims releases a dead process's claims on chat messages, so that
// the messages it was delivering are delivered now, not when the claims
// run out minutes later. Nothing is audited: a claim is not a state anyone
// reads.
func (sw *sweep) chatClaims(ctx context.Context) error {
	claims, err := ownedRows(ctx, sw.tx, `SELECT id, claim_owner FROM chat_outbox WHERE claim_owner <> '' AND claim_until > ? ORDER BY seq`+
		sw.tx.dialect().forUpdate, sw.now.UnixNano())
	if err != nil {
		return err
	}
	for _, c := range claims {
		if !sw.dead(c.owner) {
			continue
		}
		if _, err := sw.tx.ExecContext(ctx, `UPDATE chat_outbox SET claim_owner = '', claim_until = 0 WHERE id = ? AND claim_owner = ?`,
			c.id, c.owner); err != nil {
			return err
		}
		sw.rec.ChatMessages++
	}
	return nil
}

// work settles a dead process's started work (recoverWork): requeued,
// completed or abandoned.
func (sw *sweep) work(ctx context.Context) error {
	work, err := ownedRows(ctx, sw.tx, `SELECT id, owner FROM work WHERE state = 'started' ORDER BY id`+sw.tx.dialect().forUpdate)
	if err != nil {
		return err
	}
	for _, w := range work {
		if !sw.dead(w.owner) {
			continue
		}
		if err := recoverWork(ctx, sw.tx, sw.now, w.id, &sw.rec); err != nil {
			return err
		}
	}
	return nil
}

type owned struct{ id, owner string }

func ownedRows(ctx context.Context, tx querier, q string, args ...any) ([]owned, error) {
	rows, err := tx.QueryContext(ctx, q, args...)
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

type runningRow struct {
	owned
	report sql.NullString
}

func runningRows(ctx context.Context, tx querier) ([]runningRow, error) {
	rows, err := tx.QueryContext(ctx, `SELECT id, owner, report FROM runs WHERE status = 'running' ORDER BY id`+tx.dialect().forUpdate)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }() // rows.Err reports how reading went
	var out []runningRow
	for rows.Next() {
		var r runningRow
		if err := rows.Scan(&r.id, &r.owner, &r.report); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// finalReport reads the outcome and end of a stored report. The store keeps
// reports opaque, except for this: a report that names its outcome and when
// it finished is a run's result, not live progress (see SetRunReport).
func finalReport(report sql.NullString) (Outcome, time.Time, bool) {
	if !report.Valid || report.String == "" {
		return "", time.Time{}, false
	}
	var r struct {
		Outcome    Outcome   `json:"outcome"`
		FinishedAt time.Time `json:"finished_at"`
	}
	if err := json.Unmarshal([]byte(report.String), &r); err != nil || r.Outcome == OutcomeNone || !r.Outcome.Valid() || r.FinishedAt.IsZero() {
		return "", time.Time{}, false
	}
	return r.Outcome, r.FinishedAt, true
}

// recoverWork decides what becomes of work a dead process had started. Work
// whose run ended (finished, failed or cancelled, its report stored) is done:
// it is never run again. Work whose run was cut short, or that had no run
// yet, is queued again, up to MaxWorkAttempts claims in all.
func recoverWork(ctx context.Context, tx querier, now time.Time, id string, rec *Recovery) error {
	w, err := scanWork(tx.QueryRowContext(ctx, `SELECT `+workColumns+` FROM work WHERE id = ?`, id))
	if err != nil {
		return err
	}
	var runStatus RunStatus
	if w.RunID != "" {
		// The runs above were recovered in this transaction, so the status
		// read here is the one after recovery.
		err := tx.QueryRowContext(ctx, `SELECT status FROM runs WHERE id = ?`, w.RunID).Scan(&runStatus)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
	}
	from := w.State
	switch {
	case runStatus.Final() && runStatus != RunInterrupted:
		w.State, w.DoneAt = WorkDone, now
		rec.Completed = append(rec.Completed, id)
		if !slices.Contains(rec.Finished, w.RunID) {
			rec.Finished = append(rec.Finished, w.RunID)
		}
	case w.Attempts >= MaxWorkAttempts:
		w.State, w.DoneAt = WorkDone, now
		rec.Abandoned = append(rec.Abandoned, id)
	default:
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
