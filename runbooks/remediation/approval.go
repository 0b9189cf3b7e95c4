package remediation

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Outcomes of a remediation that callers (CLI, bot) branch on.
var (
	// ErrNotApprover: the person is not named by the remediation's policy.
	ErrNotApprover = errors.New("not an approver for this remediation")
	// ErrPreconditionFailed: right before applying, the diagnosed state no
	// longer holds (the service recovered on its own) or a precondition is
	// false; nothing was done.
	ErrPreconditionFailed = errors.New("precondition no longer holds")
	// ErrPlanChanged: the target changed since the plan was approved; it
	// needs a new plan and a new approval.
	ErrPlanChanged = errors.New("the plan changed since it was approved")
	// ErrRateLimited: this remediation already ran as often as its policy
	// allows in the last hour.
	ErrRateLimited = errors.New("rate limit reached")
	// ErrCircuitOpen: the last remediation for this diagnosis did not fix
	// it; repeating it is refused and humans must take over.
	ErrCircuitOpen = errors.New("the last remediation for this diagnosis did not fix it; escalate to a human")
	// ErrApprovalExpired: the plan was approved, but not applied before its
	// approval window closed; it needs a new proposal.
	ErrApprovalExpired = errors.New("the approval expired before the plan was applied")
	// ErrNotApproved: the plan is not (or no longer) approved.
	ErrNotApproved = errors.New("plan is not approved")
	// ErrApproversUnknown: whether the person may approve could not be
	// checked (a group lookup failed); the vote was not counted.
	ErrApproversUnknown = errors.New("could not check who may approve")
)

// Directory resolves approver groups whose members live outside runbot's
// config, such as a Slack user group kept by the on-call rotation. Members
// returns known=false for a group it does not resolve.
type Directory interface {
	Members(ctx context.Context, group string) (members []string, known bool, err error)
}

// MayApprove reports whether user may approve under approvers: named
// directly, in a config group, or in a group the directory resolves. A
// failed lookup is an error wrapping ErrApproversUnknown, never a yes.
func (r *Remediator) MayApprove(ctx context.Context, approvers []string, user string) (bool, error) {
	if r.Groups.Authorized(approvers, user) {
		return true, nil
	}
	if r.Directory == nil {
		return false, nil
	}
	for _, a := range approvers {
		name, isGroup := groupName(a)
		if !isGroup {
			continue
		}
		members, known, err := r.Directory.Members(ctx, name)
		if err != nil {
			return false, fmt.Errorf("%w: members of %s: %w", ErrApproversUnknown, a, err)
		}
		if known && slices.Contains(members, user) {
			return true, nil
		}
	}
	return false, nil
}

// Groups maps group names to their members, from config. An approver
// entry "@sre-oncall" or "group:sre-oncall" names a group; anything else is
// a user id.
type Groups map[string][]string

// Authorized reports whether user is named by the approvers list.
func (g Groups) Authorized(approvers []string, user string) bool {
	for _, a := range approvers {
		name, isGroup := groupName(a)
		if !isGroup {
			if a == user {
				return true
			}
			continue
		}
		if slices.Contains(g[name], user) {
			return true
		}
	}
	return false
}

// Undefined returns the groups approvers name that have no members in g,
// so a refusal can say that the group, not the person, is what is missing.
func (g Groups) Undefined(approvers []string) []string {
	var out []string
	for _, a := range approvers {
		if name, isGroup := groupName(a); isGroup && len(g[name]) == 0 {
			out = append(out, name)
		}
	}
	return out
}

func groupName(a string) (string, bool) {
	if s, ok := strings.CutPrefix(a, "@"); ok {
		return s, true
	}
	if s, ok := strings.CutPrefix(a, "group:"); ok {
		return s, true
	}
	return "", false
}
