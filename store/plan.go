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

// Plan is a remediation proposed by a run, waiting for or past approval.
type Plan struct {
	ID          string `json:"id"`
	RunID       string `json:"run_id"`
	Remediation string `json:"remediation"`
	// Diagnosis is the diagnosis that proposed the remediation; rate
	// limits and the circuit breaker look plans up by it.
	Diagnosis  string `json:"diagnosis,omitempty"`
	Deployment string `json:"deployment"`
	// Hash is the caller's content hash of Body. An approval is bound to
	// the hash that was shown to the approver.
	Hash string `json:"hash"`
	// Body is the plan itself (actions, diffs, commands) as JSON; opaque
	// to the store.
	Body        json.RawMessage `json:"plan"`
	RequestedBy string          `json:"requested_by"`
	Policy      Policy          `json:"policy"`
	State       PlanState       `json:"state"`
	CreatedAt   time.Time       `json:"created_at"`
	UpdatedAt   time.Time       `json:"updated_at"`
	// AppliedAt is when the plan entered applying.
	AppliedAt  time.Time `json:"applied_at,omitzero"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
	// Owner names the process that applies it (host/pid/start).
	Owner string `json:"owner,omitempty"`
}

// Policy is who may approve a plan and until when.
type Policy struct {
	// Approvers and Groups are who may approve; the bot checks membership
	// before it calls RecordApproval. The store keeps them for display.
	Approvers []string `json:"approvers,omitempty"`
	Groups    []string `json:"groups,omitempty"`
	// MinApprovals is how many distinct approvers are needed (at least 1).
	MinApprovals int `json:"min_approvals,omitempty"`
	// TwoPerson forbids the requester to approve: someone else must.
	TwoPerson bool `json:"two_person,omitempty"`
	// ExpiresAt closes the approval window; zero never expires.
	ExpiresAt time.Time `json:"expires_at,omitzero"`
}

// Needed is the number of distinct approvals the policy requires.
func (p Policy) Needed() int {
	return max(p.MinApprovals, 1)
}

func (p Policy) expired(now time.Time) bool {
	return !p.ExpiresAt.IsZero() && !now.Before(p.ExpiresAt)
}

// PlanFilter selects plans for ListPlans. Zero fields do not filter.
type PlanFilter struct {
	RunID       string
	Deployment  string
	Remediation string
	States      []PlanState
	// Limit caps the result; 0 means 100.
	Limit int
}

// Transition is a compare-and-set move of a plan's state.
type Transition struct {
	PlanID   string
	From, To PlanState
	Actor    string
	// Detail is kept in the audit entry (why, error text, verify result).
	Detail json.RawMessage
}

const planColumns = `id, run_id, remediation, diagnosis, deployment, hash, body, requested_by, policy, state,
	created_at, updated_at, applied_at, finished_at, owner`

func scanPlan(row interface{ Scan(...any) error }) (Plan, error) {
	var (
		p                                   Plan
		body, policy                        string
		created, updated, applied, finished sql.NullInt64
	)
	err := row.Scan(&p.ID, &p.RunID, &p.Remediation, &p.Diagnosis, &p.Deployment, &p.Hash, &body, &p.RequestedBy,
		&policy, &p.State, &created, &updated, &applied, &finished, &p.Owner)
	if err != nil {
		return Plan{}, err
	}
	p.Body = json.RawMessage(body)
	if err := json.Unmarshal([]byte(policy), &p.Policy); err != nil {
		return Plan{}, fmt.Errorf("decode policy of plan %s: %w", p.ID, err)
	}
	p.CreatedAt, p.UpdatedAt = fromNanos(created), fromNanos(updated)
	p.AppliedAt, p.FinishedAt = fromNanos(applied), fromNanos(finished)
	return p, nil
}

func scanPlans(rows *sql.Rows) ([]Plan, error) {
	defer func() { _ = rows.Close() }() // rows.Err reports how reading went
	var plans []Plan
	for rows.Next() {
		p, err := scanPlan(rows)
		if err != nil {
			return nil, err
		}
		plans = append(plans, p)
	}
	return plans, rows.Err()
}

// CreatePlan inserts a proposed plan and supersedes older proposals of the
// same remediation on the same deployment.
func (s *sqlStore) CreatePlan(ctx context.Context, p Plan) (Plan, []Plan, error) {
	switch {
	case p.RunID == "", p.Remediation == "", p.Deployment == "", p.Hash == "":
		return Plan{}, nil, errors.New("create plan: run_id, remediation, deployment and hash are required")
	case len(p.Body) == 0 || !json.Valid(p.Body):
		return Plan{}, nil, errors.New("create plan: body must be a JSON document")
	}
	if p.ID != "" {
		if err := checkID(p.ID); err != nil {
			return Plan{}, nil, fmt.Errorf("create plan: %w", err)
		}
	}
	policy, err := json.Marshal(p.Policy)
	if err != nil {
		return Plan{}, nil, fmt.Errorf("create plan: encode policy: %w", err)
	}
	now := s.clock()
	p.State, p.CreatedAt, p.UpdatedAt, p.AppliedAt, p.FinishedAt, p.Owner = PlanProposed, now, now, time.Time{}, time.Time{}, ""
	generated := p.ID == ""
	var superseded []Plan
	for attempt := 0; ; attempt++ {
		if generated {
			p.ID = newID("p", now)
		}
		superseded = nil
		err = s.write(ctx, func(tx querier) error {
			// Two proposals of one remediation on one deployment made at
			// once must still leave one proposed: the second supersedes
			// the first, which it can only see once the first committed.
			if err := lockKey(ctx, tx, "plan/"+p.Deployment+"/"+p.Remediation); err != nil {
				return err
			}
			rows, err := tx.QueryContext(ctx, `UPDATE plans SET state = 'superseded', updated_at = ?, finished_at = ?
				WHERE deployment = ? AND remediation = ? AND state = 'proposed' RETURNING `+planColumns,
				now.UnixNano(), now.UnixNano(), p.Deployment, p.Remediation)
			if err != nil {
				return fmt.Errorf("supersede: %w", err)
			}
			if superseded, err = scanPlans(rows); err != nil {
				return fmt.Errorf("supersede: %w", err)
			}
			for _, old := range superseded {
				if err := appendAudit(ctx, tx, AuditEvent{At: now, RunID: old.RunID, PlanID: old.ID, Kind: AuditPlanState,
					Actor: p.RequestedBy, Detail: mustJSON(map[string]any{"from": PlanProposed, "to": PlanSuperseded, "by": p.ID})}); err != nil {
					return err
				}
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO plans (`+planColumns+`, expires_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
				p.ID, p.RunID, p.Remediation, p.Diagnosis, p.Deployment, p.Hash, string(p.Body), p.RequestedBy,
				string(policy), p.State, now.UnixNano(), now.UnixNano(), nil, nil, p.Owner, nanos(p.Policy.ExpiresAt)); err != nil {
				return err
			}
			return appendAudit(ctx, tx, AuditEvent{At: now, RunID: p.RunID, PlanID: p.ID, Kind: AuditPlanCreated, Actor: p.RequestedBy,
				Detail: mustJSON(map[string]any{"remediation": p.Remediation, "deployment": p.Deployment, "hash": p.Hash})})
		})
		if generated && isUniqueViolation(err) && attempt < 5 {
			continue
		}
		if err != nil {
			return Plan{}, nil, fmt.Errorf("create plan for run %s: %w", p.RunID, err)
		}
		p.Policy.ExpiresAt = p.Policy.ExpiresAt.UTC()
		return p, superseded, nil
	}
}

// GetPlan returns one plan by ID or unique ID prefix.
func (s *sqlStore) GetPlan(ctx context.Context, id string) (Plan, error) {
	if err := checkID(id); err != nil {
		return Plan{}, fmt.Errorf("get plan: %w", err)
	}
	p, err := getPlan(ctx, s.read(), id)
	if errors.Is(err, ErrNotFound) {
		full, perr := s.resolvePrefix(ctx, "plans", id)
		if perr != nil {
			return Plan{}, fmt.Errorf("get plan %s: %w", id, perr)
		}
		p, err = getPlan(ctx, s.read(), full)
	}
	if err != nil {
		return Plan{}, fmt.Errorf("get plan %s: %w", id, err)
	}
	return p, nil
}

func getPlan(ctx context.Context, q querier, id string) (Plan, error) {
	return selectPlan(ctx, q, id, "")
}

// lockPlan reads a plan in a write transaction that decides on its state
// (an approval, an action start): the row stays locked until the
// transaction ends, so no other process moves the plan in between.
func lockPlan(ctx context.Context, tx querier, id string) (Plan, error) {
	return selectPlan(ctx, tx, id, tx.dialect().forUpdate)
}

func selectPlan(ctx context.Context, q querier, id, lock string) (Plan, error) {
	p, err := scanPlan(q.QueryRowContext(ctx, `SELECT `+planColumns+` FROM plans WHERE id = ?`+lock, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Plan{}, ErrNotFound
	}
	return p, err
}

// ListPlans returns plans newest first.
func (s *sqlStore) ListPlans(ctx context.Context, f PlanFilter) ([]Plan, error) {
	var where []string
	var args []any
	if f.RunID != "" {
		where, args = append(where, "run_id = ?"), append(args, f.RunID)
	}
	if f.Deployment != "" {
		where, args = append(where, "deployment = ?"), append(args, f.Deployment)
	}
	if f.Remediation != "" {
		where, args = append(where, "remediation = ?"), append(args, f.Remediation)
	}
	if len(f.States) > 0 {
		where = append(where, "state IN (?"+strings.Repeat(",?", len(f.States)-1)+")")
		for _, st := range f.States {
			args = append(args, st)
		}
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	q := `SELECT ` + planColumns + ` FROM plans`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY created_at DESC, rowid DESC LIMIT ?`
	rows, err := s.read().QueryContext(ctx, q, append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("list plans: %w", err)
	}
	plans, err := scanPlans(rows)
	if err != nil {
		return nil, fmt.Errorf("list plans: %w", err)
	}
	return plans, nil
}

// PendingPlans returns proposed plans whose approval window is open, oldest
// first.
func (s *sqlStore) PendingPlans(ctx context.Context) ([]Plan, error) {
	rows, err := s.read().QueryContext(ctx, `SELECT `+planColumns+` FROM plans
		WHERE state = 'proposed' AND (expires_at IS NULL OR expires_at > ?) ORDER BY created_at, rowid`, s.clock().UnixNano())
	if err != nil {
		return nil, fmt.Errorf("list pending plans: %w", err)
	}
	plans, err := scanPlans(rows)
	if err != nil {
		return nil, fmt.Errorf("list pending plans: %w", err)
	}
	return plans, nil
}

// ExpirePlans moves proposed and approved plans past their expiry to expired.
func (s *sqlStore) ExpirePlans(ctx context.Context) ([]Plan, error) {
	now := s.clock()
	var expired []Plan
	err := s.write(ctx, func(tx querier) error {
		rows, err := tx.QueryContext(ctx, `SELECT `+planColumns+` FROM plans
			WHERE state IN ('proposed', 'approved') AND expires_at IS NOT NULL AND expires_at <= ? ORDER BY id`+tx.dialect().forUpdate,
			now.UnixNano())
		if err != nil {
			return err
		}
		due, err := scanPlans(rows)
		if err != nil {
			return err
		}
		for _, p := range due {
			moved, err := transition(ctx, tx, now, Transition{PlanID: p.ID, From: p.State, To: PlanExpired, Actor: "runbot"})
			if err != nil {
				return err
			}
			expired = append(expired, moved)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("expire plans: %w", err)
	}
	return expired, nil
}

// TransitionPlan moves a plan's state with compare-and-set.
func (s *sqlStore) TransitionPlan(ctx context.Context, t Transition) (Plan, error) {
	if t.To == PlanApproved || t.To == PlanDenied {
		// Approval is the one move that needs people, and the policy check
		// lives in RecordApproval; no caller may skip it.
		return Plan{}, fmt.Errorf("move plan %s to %s: %w", t.PlanID, t.To, ErrNeedsApproval)
	}
	if err := checkJSON("detail", t.Detail); err != nil {
		return Plan{}, fmt.Errorf("move plan %s: %w", t.PlanID, err)
	}
	now := s.clock()
	if t.To == PlanApplying {
		if err := s.claimable(now); err != nil {
			return Plan{}, fmt.Errorf("move plan %s from %s to %s: %w", t.PlanID, t.From, t.To, err)
		}
	}
	var p Plan
	err := s.write(ctx, func(tx querier) error {
		var err error
		p, err = transition(ctx, tx, now, t)
		if err == nil && t.To == PlanApplying {
			// The applying process owns the plan from now on; if it dies,
			// MarkInterrupted in the next process marks the plan.
			_, err = tx.ExecContext(ctx, `UPDATE plans SET owner = ? WHERE id = ?`, s.owner, p.ID)
			p.Owner = s.owner
		}
		return err
	})
	if err != nil {
		return Plan{}, fmt.Errorf("move plan %s from %s to %s: %w", t.PlanID, t.From, t.To, err)
	}
	return p, nil
}

// transition is the one place plan states change. The UPDATE's WHERE state
// = From is the compare-and-set: of two transactions making the same move,
// the second finds no row in From and reports a conflict.
func transition(ctx context.Context, tx querier, now time.Time, t Transition) (Plan, error) {
	if !CanTransition(t.From, t.To) {
		return Plan{}, &InvalidTransitionError{Kind: "plan", From: string(t.From), To: string(t.To)}
	}
	n := now.UnixNano()
	var applied, finished any
	if t.To == PlanApplying {
		applied = n
	}
	if t.To.Final() {
		finished = n
	}
	p, err := scanPlan(tx.QueryRowContext(ctx, `UPDATE plans SET state = ?, updated_at = ?,
		applied_at = coalesce(?, applied_at), finished_at = coalesce(?, finished_at)
		WHERE id = ? AND state = ? RETURNING `+planColumns,
		t.To, n, applied, finished, t.PlanID, t.From))
	if errors.Is(err, sql.ErrNoRows) {
		cur, gerr := getPlan(ctx, tx, t.PlanID)
		if gerr != nil {
			return Plan{}, gerr
		}
		return Plan{}, &StateConflictError{Kind: "plan", ID: t.PlanID, Want: string(t.From), Got: string(cur.State)}
	}
	if err != nil {
		return Plan{}, err
	}
	detail := map[string]any{"from": t.From, "to": t.To}
	if len(t.Detail) > 0 {
		detail["detail"] = t.Detail
	}
	if err := appendAudit(ctx, tx, AuditEvent{At: now, RunID: p.RunID, PlanID: p.ID, Kind: AuditPlanState,
		Actor: t.Actor, Detail: mustJSON(detail)}); err != nil {
		return Plan{}, err
	}
	return p, nil
}
