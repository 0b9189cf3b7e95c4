package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Decision is an approver's answer.
type Decision string

const (
	Approve Decision = "approve"
	Deny    Decision = "deny"
)

// Approval is one person's decision on a plan.
type Approval struct {
	PlanID   string   `json:"plan_id"`
	User     string   `json:"user"`
	Decision Decision `json:"decision"`
	// PlanHash is the hash of the plan the user was shown.
	PlanHash string    `json:"plan_hash"`
	At       time.Time `json:"at"`
}

// ApprovalResult says where a plan stands after an approval was recorded.
type ApprovalResult struct {
	Plan Plan `json:"plan"`
	// Approvals counts distinct approvers of the current hash; Needed is
	// what the policy requires.
	Approvals int `json:"approvals"`
	Needed    int `json:"needed"`
	// Settled is true for exactly the one call whose decision moved the
	// plan to approved or denied; a repeated click gets false.
	Settled bool `json:"settled"`
}

// RecordApproval records a decision and settles the plan when it can. The
// whole check-and-move runs in one write transaction (the plan row locked), so two approvers
// clicking at once cannot both (or neither) settle the plan.
func (s *sqlStore) RecordApproval(ctx context.Context, a Approval) (ApprovalResult, error) {
	if a.PlanID == "" || a.User == "" {
		return ApprovalResult{}, errors.New("record approval: plan and user are required")
	}
	if a.Decision != Approve && a.Decision != Deny {
		return ApprovalResult{}, fmt.Errorf("record approval: invalid decision %q", a.Decision)
	}
	now := s.clock()
	if a.At.IsZero() {
		a.At = now
	}
	var res ApprovalResult
	err := s.write(ctx, func(tx querier) error {
		p, err := lockPlan(ctx, tx, a.PlanID)
		if err != nil {
			return err
		}
		res.Plan, res.Needed = p, p.Policy.Needed()
		refuse := func(reason ApprovalRefusal) error {
			if err := appendAudit(ctx, tx, AuditEvent{At: now, RunID: p.RunID, PlanID: p.ID, Kind: AuditApprovalRefused,
				Actor: a.User, Detail: mustJSON(map[string]any{"decision": a.Decision, "reason": reason, "plan_hash": a.PlanHash})}); err != nil {
				return err
			}
			return commitAnyway{&ApprovalError{PlanID: p.ID, User: a.User, Reason: reason, State: res.Plan.State}}
		}
		if p.State != PlanProposed {
			return refuse(RefusedClosed)
		}
		if p.Policy.expired(now) {
			if res.Plan, err = transition(ctx, tx, now, Transition{PlanID: p.ID, From: PlanProposed, To: PlanExpired, Actor: "runbot"}); err != nil {
				return err
			}
			return refuse(RefusedExpired)
		}
		if a.PlanHash != p.Hash {
			return refuse(RefusedStale)
		}
		if a.Decision == Approve && p.Policy.TwoPerson && a.User == p.RequestedBy {
			return refuse(RefusedSelf)
		}
		ins, err := tx.ExecContext(ctx, `INSERT INTO approvals (plan_id, approver, decision, plan_hash, at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT DO NOTHING`, p.ID, a.User, a.Decision, a.PlanHash, a.At.UnixNano())
		if err != nil {
			return err
		}
		if n, _ := ins.RowsAffected(); n == 1 {
			if err := appendAudit(ctx, tx, AuditEvent{At: now, RunID: p.RunID, PlanID: p.ID, Kind: AuditApproval,
				Actor: a.User, Detail: mustJSON(map[string]any{"decision": a.Decision, "plan_hash": a.PlanHash})}); err != nil {
				return err
			}
		}
		// Only approvals of the hash the plan has now count.
		if err := tx.QueryRowContext(ctx, `SELECT count(DISTINCT approver) FROM approvals
			WHERE plan_id = ? AND decision = 'approve' AND plan_hash = ?`, p.ID, p.Hash).Scan(&res.Approvals); err != nil {
			return err
		}
		to := PlanState("")
		switch {
		case a.Decision == Deny:
			to = PlanDenied
		case res.Approvals >= res.Needed:
			to = PlanApproved
		default:
			return nil
		}
		if res.Plan, err = transition(ctx, tx, now, Transition{PlanID: p.ID, From: PlanProposed, To: to, Actor: a.User}); err != nil {
			return err
		}
		res.Settled = true
		return nil
	})
	if err != nil {
		return res, fmt.Errorf("record %s of plan %s by %s: %w", a.Decision, a.PlanID, a.User, err)
	}
	return res, nil
}

// Approvals returns a plan's recorded decisions in the order they were made.
func (s *sqlStore) Approvals(ctx context.Context, planID string) ([]Approval, error) {
	rows, err := s.read().QueryContext(ctx, `SELECT plan_id, approver, decision, plan_hash, at FROM approvals
		WHERE plan_id = ? ORDER BY at, approver`, planID)
	if err != nil {
		return nil, fmt.Errorf("list approvals of plan %s: %w", planID, err)
	}
	defer func() { _ = rows.Close() }() // rows.Err reports how reading went
	var out []Approval
	for rows.Next() {
		var (
			a  Approval
			at sql.NullInt64
		)
		if err := rows.Scan(&a.PlanID, &a.User, &a.Decision, &a.PlanHash, &at); err != nil {
			return nil, fmt.Errorf("list approvals of plan %s: %w", planID, err)
		}
		a.At = fromNanos(at)
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list approvals of plan %s: %w", planID, err)
	}
	return out, nil
}
