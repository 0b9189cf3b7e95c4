package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// ActionRecord is what happened to one action of a plan on one target.
type ActionRecord struct {
	PlanID string `json:"plan_id"`
	// Index is the action's position in the plan.
	Index  int         `json:"index"`
	Target string      `json:"target"`
	Action string      `json:"action"`
	State  ActionState `json:"state"`
	// Detail is the action's own record (actions.Applied, an error).
	Detail     json.RawMessage `json:"detail,omitempty"`
	StartedAt  time.Time       `json:"started_at"`
	FinishedAt time.Time       `json:"finished_at,omitzero"`
}

const actionColumns = `plan_id, idx, target, action, state, detail, started_at, finished_at`

func scanAction(row interface{ Scan(...any) error }) (ActionRecord, error) {
	var (
		a                 ActionRecord
		detail            sql.NullString
		started, finished sql.NullInt64
	)
	if err := row.Scan(&a.PlanID, &a.Index, &a.Target, &a.Action, &a.State, &detail, &started, &finished); err != nil {
		return ActionRecord{}, err
	}
	a.Detail, a.StartedAt, a.FinishedAt = rawJSON(detail), fromNanos(started), fromNanos(finished)
	return a, nil
}

// StartAction records an action as started before its side effect. The plan
// must be applying: an action can never start for a plan that was not
// approved, or that another process interrupted.
func (s *sqlStore) StartAction(ctx context.Context, a ActionRecord) (ActionRecord, error) {
	if a.Target == "" || a.Action == "" || a.Index < 0 {
		return ActionRecord{}, errors.New("start action: target, action and a non-negative index are required")
	}
	if err := checkJSON("detail", a.Detail); err != nil {
		return ActionRecord{}, fmt.Errorf("start action: %w", err)
	}
	now := s.clock()
	a.State, a.StartedAt, a.FinishedAt = ActionStarted, now, time.Time{}
	err := s.write(ctx, func(tx querier) error {
		p, err := lockPlan(ctx, tx, a.PlanID)
		if err != nil {
			return err
		}
		if p.State != PlanApplying {
			return &StateConflictError{Kind: "plan", ID: p.ID, Want: string(PlanApplying), Got: string(p.State)}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO actions (`+actionColumns+`) VALUES (?,?,?,?,?,?,?,?)`,
			a.PlanID, a.Index, a.Target, a.Action, a.State, jsonText(a.Detail), now.UnixNano(), nil); err != nil {
			return err
		}
		return auditAction(ctx, tx, now, p.RunID, a)
	})
	if err != nil {
		return ActionRecord{}, fmt.Errorf("start action %d (%s on %s) of plan %s: %w", a.Index, a.Action, a.Target, a.PlanID, err)
	}
	return a, nil
}

func auditAction(ctx context.Context, tx querier, now time.Time, runID string, a ActionRecord) error {
	detail := map[string]any{"index": a.Index, "target": a.Target, "action": a.Action, "state": a.State}
	if len(a.Detail) > 0 {
		detail["detail"] = a.Detail
	}
	return appendAudit(ctx, tx, AuditEvent{At: now, RunID: runID, PlanID: a.PlanID, Kind: AuditAction, Detail: mustJSON(detail)})
}

// SetActionState records what became of an action. A nil detail keeps the
// one recorded before.
func (s *sqlStore) SetActionState(ctx context.Context, planID string, index int, to ActionState, detail json.RawMessage) (ActionRecord, error) {
	if err := checkJSON("detail", detail); err != nil {
		return ActionRecord{}, fmt.Errorf("set action %d of plan %s: %w", index, planID, err)
	}
	now := s.clock()
	var a ActionRecord
	err := s.write(ctx, func(tx querier) error {
		cur, err := scanAction(tx.QueryRowContext(ctx, `SELECT `+actionColumns+` FROM actions WHERE plan_id = ? AND idx = ?`, planID, index))
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		if !canActionTransition(cur.State, to) {
			return &InvalidTransitionError{Kind: "action", From: string(cur.State), To: string(to)}
		}
		a, err = scanAction(tx.QueryRowContext(ctx, `UPDATE actions SET state = ?, detail = coalesce(?, detail), finished_at = ?
			WHERE plan_id = ? AND idx = ? AND state = ? RETURNING `+actionColumns,
			to, jsonText(detail), now.UnixNano(), planID, index, cur.State))
		if err != nil {
			return err
		}
		var runID string
		if err := tx.QueryRowContext(ctx, `SELECT run_id FROM plans WHERE id = ?`, planID).Scan(&runID); err != nil {
			return err
		}
		return auditAction(ctx, tx, now, runID, a)
	})
	if err != nil {
		return ActionRecord{}, fmt.Errorf("set action %d of plan %s to %s: %w", index, planID, to, err)
	}
	return a, nil
}

// Actions returns a plan's action records in plan order.
func (s *sqlStore) Actions(ctx context.Context, planID string) ([]ActionRecord, error) {
	rows, err := s.read().QueryContext(ctx, `SELECT `+actionColumns+` FROM actions WHERE plan_id = ? ORDER BY idx`, planID)
	if err != nil {
		return nil, fmt.Errorf("list actions of plan %s: %w", planID, err)
	}
	defer func() { _ = rows.Close() }() // rows.Err reports how reading went
	var out []ActionRecord
	for rows.Next() {
		a, err := scanAction(rows)
		if err != nil {
			return nil, fmt.Errorf("list actions of plan %s: %w", planID, err)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list actions of plan %s: %w", planID, err)
	}
	return out, nil
}
