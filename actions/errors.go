package actions

import (
	"context"
	"errors"
)

// ErrPlanStale means the target changed since the plan was made; the change
// needs a new plan and a new approval.
var ErrPlanStale = errors.New("target changed since the plan was approved")

// ErrNotReversible means Rollback was asked of an action that cannot undo.
var ErrNotReversible = errors.New("action is not reversible")

// OutcomeUnknown reports whether err, from Apply, leaves unknown whether
// the action took effect on its target: the connection broke while its
// command ran (a runner marks such an error with a method OutcomeUnknown
// that returns true, as sshrun.ErrConnectionLost does), or its deadline
// passed before it answered. A restart that may have happened is not one
// that failed: whoever reads the plan must check the target before
// anything is approved again.
func OutcomeUnknown(err error) bool {
	var u interface{ OutcomeUnknown() bool }
	if errors.As(err, &u) && u.OutcomeUnknown() {
		return true
	}
	return errors.Is(err, context.DeadlineExceeded)
}
