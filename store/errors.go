package store

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

var (
	// ErrNotFound is returned (wrapped) when a record does not exist.
	ErrNotFound = errors.New("not found")
	// ErrNoWork is returned by ClaimWork when nothing is pending.
	ErrNoWork = errors.New("no pending work")
	// ErrLockLost is returned when a lock's lease expired and it was taken
	// or released by someone else, so its holder no longer holds it.
	ErrLockLost = errors.New("lock no longer held")
	// ErrNeedsApproval is returned by TransitionPlan for a move to approved
	// or denied: only RecordApproval, which checks the policy, makes those.
	ErrNeedsApproval = errors.New("only an approval can approve or deny a plan")
)

// AmbiguousIDError says that an ID prefix matches more than one record.
type AmbiguousIDError struct {
	Prefix  string
	Matches []string
}

func (e *AmbiguousIDError) Error() string {
	return fmt.Sprintf("id prefix %q is ambiguous: matches %s", e.Prefix, strings.Join(e.Matches, ", "))
}

// InvalidTransitionError says that a state change is not allowed by the state
// machine at all, whatever the record's current state. It is a programming
// error in the caller.
type InvalidTransitionError struct {
	// Kind is the record kind: "run", "plan", "action" or "work".
	Kind     string
	From, To string
}

func (e *InvalidTransitionError) Error() string {
	return fmt.Sprintf("%s cannot go from %s to %s", e.Kind, e.From, e.To)
}

// StateConflictError says that a compare-and-set state change was refused
// because the record was no longer in the expected state: someone else moved
// it first (a double click, a retry, another process).
type StateConflictError struct {
	Kind string
	ID   string
	// Want is the state the caller expected, Got the state the record had.
	Want, Got string
}

func (e *StateConflictError) Error() string {
	return fmt.Sprintf("%s %s is %s, not %s", e.Kind, e.ID, e.Got, e.Want)
}

// LockedError says that a lock is held by someone else and has not expired.
type LockedError struct {
	Key    string
	Holder string
	// Since is when the holder acquired the lock, Expires when its lease
	// ends unless refreshed.
	Since   time.Time
	Expires time.Time
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("lock %q is held by %s since %s", e.Key, e.Holder, e.Since.Format(time.RFC3339))
}

// ApprovalRefusal says why an approval was not accepted.
type ApprovalRefusal string

const (
	// RefusedStale means the approval was granted to a different plan hash
	// than the plan now has: the approver saw another plan.
	RefusedStale ApprovalRefusal = "stale"
	// RefusedExpired means the approval window closed; the plan is expired.
	RefusedExpired ApprovalRefusal = "expired"
	// RefusedClosed means the plan is no longer waiting for approval.
	RefusedClosed ApprovalRefusal = "closed"
	// RefusedSelf means the two-person rule forbids the requester to approve.
	RefusedSelf ApprovalRefusal = "self"
	// RefusedPolicy means the remediation's policy refused the person
	// before the store was asked (not an approver, or whether they are
	// could not be checked); the ApprovalError's Err says which. The store
	// itself never refuses with it.
	RefusedPolicy ApprovalRefusal = "policy"
)

// ApprovalError says that an approval, a denial or another act only an
// approver may do was refused. It is the one refusal type: the store
// returns it for what it refuses atomically (Reason stale, expired, closed
// or self), and package remediation for what its policy refuses first
// (Reason RefusedPolicy, Err the policy's sentinel error), so callers match
// every refusal with errors.As on this one type and its cause with
// errors.Is.
type ApprovalError struct {
	PlanID string
	User   string
	Reason ApprovalRefusal
	// State is the plan's state when the approval was refused.
	State PlanState
	// Err is why the policy refused, for Reason RefusedPolicy, and Detail
	// what the person may want to know about it (who the approvers are).
	Err    error
	Detail string
}

func (e *ApprovalError) Error() string {
	switch e.Reason {
	case RefusedStale:
		return fmt.Sprintf("approval by %s refused: plan %s changed since it was shown", e.User, e.PlanID)
	case RefusedExpired:
		return fmt.Sprintf("approval by %s refused: plan %s expired", e.User, e.PlanID)
	case RefusedSelf:
		return fmt.Sprintf("approval by %s refused: plan %s needs a second person", e.User, e.PlanID)
	case RefusedPolicy:
		if e.Detail != "" {
			return fmt.Sprintf("approval by %s refused: %v (%s)", e.User, e.Err, e.Detail)
		}
		return fmt.Sprintf("approval by %s refused: %v", e.User, e.Err)
	default:
		return fmt.Sprintf("approval by %s refused: plan %s is %s", e.User, e.PlanID, e.State)
	}
}

// Unwrap lets callers match the policy's reason with errors.Is.
func (e *ApprovalError) Unwrap() error { return e.Err }
