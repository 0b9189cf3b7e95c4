package actions

import "errors"

// ErrPlanStale means the target changed since the plan was made; the change
// needs a new plan and a new approval.
var ErrPlanStale = errors.New("target changed since the plan was approved")

// ErrNotReversible means Rollback was asked of an action that cannot undo.
var ErrNotReversible = errors.New("action is not reversible")
