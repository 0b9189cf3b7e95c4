package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// AppliedFilter selects applied plans for CountApplied. Deployment and Since
// are required; the other fields narrow the count when set.
type AppliedFilter struct {
	Deployment  string
	Since       time.Time
	Remediation string
	Diagnosis   string
	// Action and Target keep plans with at least one action record of that
	// action type (e.g. "systemd_restart") and/or on that target (e.g.
	// "decode@gpu-1"), whatever became of it: a started action may have
	// had its effect.
	Action string
	Target string
}

// CountApplied counts plans on a deployment that entered applying at or
// after Since: "how many restarts of decode on dsv4 in the last hour".
func (s *sqlStore) CountApplied(ctx context.Context, f AppliedFilter) (int, error) {
	if f.Deployment == "" || f.Since.IsZero() {
		return 0, errors.New("count applied plans: deployment and since are required")
	}
	q := `SELECT count(*) FROM plans p WHERE p.deployment = ? AND p.applied_at >= ?`
	args := []any{f.Deployment, f.Since.UnixNano()}
	if f.Remediation != "" {
		q, args = q+` AND p.remediation = ?`, append(args, f.Remediation)
	}
	if f.Diagnosis != "" {
		q, args = q+` AND p.diagnosis = ?`, append(args, f.Diagnosis)
	}
	if f.Action != "" || f.Target != "" {
		q += ` AND EXISTS (SELECT 1 FROM actions a WHERE a.plan_id = p.id AND (? = '' OR a.action = ?) AND (? = '' OR a.target = ?))`
		args = append(args, f.Action, f.Action, f.Target, f.Target)
	}
	var n int
	if err := s.read().QueryRowContext(ctx, q, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count applied plans on %s: %w", f.Deployment, err)
	}
	return n, nil
}
