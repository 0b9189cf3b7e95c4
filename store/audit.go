package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// AuditEvent is one entry of the append-only audit log.
type AuditEvent struct {
	// ID orders the log; it is assigned on append.
	ID     int64           `json:"id"`
	At     time.Time       `json:"at"`
	RunID  string          `json:"run_id,omitempty"`
	PlanID string          `json:"plan_id,omitempty"`
	Kind   string          `json:"kind"`
	Actor  string          `json:"actor,omitempty"`
	Detail json.RawMessage `json:"detail,omitempty"`
}

// Audit kinds the store writes itself. Callers may append other kinds
// (e.g. "slack.posted") with AppendAudit.
const (
	AuditRunCreated      = "run.created"
	AuditRunFinished     = "run.finished"
	AuditRunInterrupted  = "run.interrupted"
	AuditRunWithdrawn    = "run.withdrawn" // a run row whose creation was unconfirmed and under which nothing ran
	AuditPlanCreated     = "plan.created"
	AuditPlanState       = "plan.state" // detail: {"from", "to"}
	AuditApproval        = "plan.approval"
	AuditApprovalRefused = "plan.approval_refused"
	AuditAction          = "action.state" // detail: {"index", "target", "action", "state"}
	AuditLockAcquired    = "lock.acquired"
	AuditLockReleased    = "lock.released"
	AuditAlertFiring     = "alert.firing"
	AuditAlertResolved   = "alert.resolved"
	AuditWorkEnqueued    = "work.enqueued"
	AuditWorkState       = "work.state"
)

// AuditFilter selects audit events. Zero fields do not filter.
type AuditFilter struct {
	RunID  string
	PlanID string
	Kind   string
	Since  time.Time
	// AfterID keeps events with a larger ID, for paging and tailing.
	AfterID int64
	// Limit caps the result; 0 means 1000.
	Limit int
}

// AppendAudit adds an entry; an empty At is now.
func (s *sqlStore) AppendAudit(ctx context.Context, e AuditEvent) (AuditEvent, error) {
	if e.Kind == "" {
		return AuditEvent{}, errors.New("append audit: kind is required")
	}
	if err := checkJSON("detail", e.Detail); err != nil {
		return AuditEvent{}, fmt.Errorf("append audit: %w", err)
	}
	if e.At.IsZero() {
		e.At = s.clock()
	}
	err := s.write(ctx, func(tx querier) error {
		return tx.QueryRowContext(ctx, auditInsert+` RETURNING id`, auditArgs(e)...).Scan(&e.ID)
	})
	if err != nil {
		return AuditEvent{}, fmt.Errorf("append audit %s: %w", e.Kind, err)
	}
	e.At = e.At.UTC()
	return e, nil
}

const auditInsert = `INSERT INTO audit (at, run_id, plan_id, kind, actor, detail) VALUES (?, ?, ?, ?, ?, ?)`

func auditArgs(e AuditEvent) []any {
	return []any{e.At.UnixNano(), e.RunID, e.PlanID, e.Kind, e.Actor, jsonText(e.Detail)}
}

// appendAudit writes an entry inside the transaction that makes the change
// it records, so the log and the state never disagree.
func appendAudit(ctx context.Context, tx querier, e AuditEvent) error {
	if _, err := tx.ExecContext(ctx, auditInsert, auditArgs(e)...); err != nil {
		return fmt.Errorf("append audit %s: %w", e.Kind, err)
	}
	return nil
}

// Audit returns entries oldest first.
func (s *sqlStore) Audit(ctx context.Context, f AuditFilter) ([]AuditEvent, error) {
	var where []string
	var args []any
	if f.RunID != "" {
		where, args = append(where, "run_id = ?"), append(args, f.RunID)
	}
	if f.PlanID != "" {
		where, args = append(where, "plan_id = ?"), append(args, f.PlanID)
	}
	if f.Kind != "" {
		where, args = append(where, "kind = ?"), append(args, f.Kind)
	}
	if !f.Since.IsZero() {
		where, args = append(where, "at >= ?"), append(args, f.Since.UnixNano())
	}
	if f.AfterID > 0 {
		where, args = append(where, "id > ?"), append(args, f.AfterID)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 1000
	}
	q := `SELECT id, at, run_id, plan_id, kind, actor, detail FROM audit`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY id LIMIT ?`
	rows, err := s.read().QueryContext(ctx, q, append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("read audit: %w", err)
	}
	defer func() { _ = rows.Close() }() // rows.Err reports how reading went
	var events []AuditEvent
	for rows.Next() {
		var (
			e      AuditEvent
			at     sql.NullInt64
			detail sql.NullString
		)
		if err := rows.Scan(&e.ID, &at, &e.RunID, &e.PlanID, &e.Kind, &e.Actor, &detail); err != nil {
			return nil, fmt.Errorf("read audit: %w", err)
		}
		e.At, e.Detail = fromNanos(at), rawJSON(detail)
		events = append(events, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read audit: %w", err)
	}
	return events, nil
}

// mustJSON encodes details the store builds itself from plain values, which
// cannot fail to encode.
func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("store: encode audit detail: %v", err))
	}
	return b
}
