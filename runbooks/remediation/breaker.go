package remediation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/runbot/runbot/store"
)

// AuditBreakerRearmed is the audit entry of a re-armed circuit breaker;
// its detail names the deployment and the diagnosis.
const AuditBreakerRearmed = "breaker.rearmed"

// ErrBreakerClosed is a re-arm of a breaker that is not open.
var ErrBreakerClosed = errors.New("the circuit breaker is not open: the last remediation for this diagnosis fixed it, or none ran")

// ErrMayNotRearm is a re-arm by someone who may not approve the plan that
// opened the breaker.
var ErrMayNotRearm = errors.New("may not re-arm the circuit breaker")

// rearm is the detail of an AuditBreakerRearmed entry.
type rearm struct {
	Deployment string `json:"deployment"`
	Diagnosis  string `json:"diagnosis"`
	// Plan is the failed plan that had opened the breaker.
	Plan string `json:"plan"`
}

// openBreaker returns the plan that keeps the breaker of a diagnosis on a
// deployment open: the last plan that ran actions for it, when that plan
// did not fix things and nobody re-armed the breaker since. It returns
// nil when the breaker is closed. except is a plan to leave out (the one
// being applied).
func (r *Remediator) openBreaker(ctx context.Context, deployment, diagnosis, except string) (*store.Plan, error) {
	prior, err := r.Store.ListPlans(ctx, store.PlanFilter{Deployment: deployment,
		States: []store.PlanState{store.PlanDone, store.PlanRolledBack, store.PlanFailed}})
	if err != nil {
		return nil, err
	}
	for _, last := range prior {
		if last.ID == except || last.Diagnosis != diagnosis || last.AppliedAt.IsZero() {
			continue
		}
		acts, err := r.Store.Actions(ctx, last.ID)
		if err != nil {
			return nil, err
		}
		if len(acts) == 0 {
			continue
		}
		if last.State == store.PlanDone {
			return nil, nil
		}
		rearmed, err := r.rearmedAfter(ctx, last)
		if err != nil || rearmed {
			return nil, err
		}
		return &last, nil
	}
	return nil, nil
}

// rearmedAfter reports whether someone re-armed the breaker that plan
// opened.
func (r *Remediator) rearmedAfter(ctx context.Context, plan store.Plan) (bool, error) {
	events, err := r.Store.Audit(ctx, store.AuditFilter{PlanID: plan.ID, Kind: AuditBreakerRearmed})
	if err != nil {
		return false, err
	}
	return len(events) > 0, nil
}

// Rearm closes the circuit breaker a failed remediation opened for a
// diagnosis on a deployment, so that a new plan for it may be applied
// again once approved: who may approve the failed plan may re-arm it. It
// is recorded in the audit log, and returns the plan that had opened it.
func (r *Remediator) Rearm(ctx context.Context, deployment, diagnosis, user string) (store.Plan, error) {
	open, err := r.openBreaker(ctx, deployment, diagnosis, "")
	if err != nil {
		return store.Plan{}, fmt.Errorf("re-arm the breaker of %s on %s: %w", diagnosis, deployment, err)
	}
	if open == nil {
		return store.Plan{}, fmt.Errorf("re-arm the breaker of %s on %s: %w", diagnosis, deployment, ErrBreakerClosed)
	}
	ok, err := r.MayApprove(ctx, open.Policy.Approvers, user)
	if err != nil {
		return store.Plan{}, fmt.Errorf("re-arm the breaker of %s on %s: %w", diagnosis, deployment, err)
	}
	if !ok {
		return store.Plan{}, &store.ApprovalError{PlanID: open.ID, User: user, Reason: store.RefusedPolicy, State: open.State, Err: ErrMayNotRearm, Detail: "only who may approve plan " + open.ID + " may re-arm the breaker it opened"}
	}
	detail, err := json.Marshal(rearm{Deployment: deployment, Diagnosis: diagnosis, Plan: open.ID})
	if err != nil {
		return store.Plan{}, fmt.Errorf("re-arm: encode: %w", err)
	}
	if _, err := r.Store.AppendAudit(ctx, store.AuditEvent{At: r.now(), PlanID: open.ID, Kind: AuditBreakerRearmed, Actor: user, Detail: detail}); err != nil {
		return store.Plan{}, fmt.Errorf("re-arm the breaker of %s on %s: %w", diagnosis, deployment, err)
	}
	return *open, nil
}
