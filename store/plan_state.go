package store

// PlanState is where a remediation plan is in its life. The moves are:
//
//	proposed  -> approved | denied | expired | superseded
//	approved  -> applying | not_needed | superseded | failed | expired
//	applying  -> verifying | rolled_back | failed | not_needed | interrupted
//	verifying -> done | rolled_back | failed | interrupted
//
// Every other state is final. Only RecordApproval moves a plan to approved
// or denied. interrupted means the applying process died; such a plan is
// never resumed, because its targets may be half-changed: a human looks, and
// a new run proposes a new plan that needs a new approval.
type PlanState string

const (
	PlanProposed    PlanState = "proposed"
	PlanApproved    PlanState = "approved"
	PlanApplying    PlanState = "applying"
	PlanVerifying   PlanState = "verifying"
	PlanDone        PlanState = "done"
	PlanRolledBack  PlanState = "rolled_back"
	PlanFailed      PlanState = "failed"
	PlanNotNeeded   PlanState = "not_needed"
	PlanDenied      PlanState = "denied"
	PlanExpired     PlanState = "expired"
	PlanSuperseded  PlanState = "superseded"
	PlanInterrupted PlanState = "interrupted"
)

// planTransitions lists every allowed move. Anything else is an
// *InvalidTransitionError.
var planTransitions = map[PlanState][]PlanState{
	PlanProposed: {PlanApproved, PlanDenied, PlanExpired, PlanSuperseded},
	// An approved plan is re-checked before it is applied: the symptom may
	// be gone (not_needed), the target may have changed (superseded), or
	// the re-check may fail. An approval not acted on before the plan's
	// expiry expires.
	PlanApproved: {PlanApplying, PlanNotNeeded, PlanSuperseded, PlanFailed, PlanExpired},
	// not_needed: every action found its target already in the wanted state.
	PlanApplying:  {PlanVerifying, PlanRolledBack, PlanFailed, PlanNotNeeded, PlanInterrupted},
	PlanVerifying: {PlanDone, PlanRolledBack, PlanFailed, PlanInterrupted},
}

// CanTransition reports whether the state machine allows from -> to.
func CanTransition(from, to PlanState) bool {
	for _, s := range planTransitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

// Final reports whether nothing can follow the state.
func (s PlanState) Final() bool { return len(planTransitions[s]) == 0 && s.valid() }

func (s PlanState) valid() bool {
	switch s {
	case PlanProposed, PlanApproved, PlanApplying, PlanVerifying, PlanDone, PlanRolledBack,
		PlanFailed, PlanNotNeeded, PlanDenied, PlanExpired, PlanSuperseded, PlanInterrupted:
		return true
	}
	return false
}

// ActionState is what became of one action of a plan.
type ActionState string

const (
	// ActionStarted is written before the side effect; an action left in
	// it by a crash may or may not have happened.
	ActionStarted        ActionState = "started"
	ActionDone           ActionState = "done"
	ActionFailed         ActionState = "failed"
	ActionRolledBack     ActionState = "rolled_back"
	ActionRollbackFailed ActionState = "rollback_failed"
	// ActionRerunning is written before an action runs again after a
	// rollback (a restart, so the restored config takes effect); like
	// ActionStarted, a crash leaves it unknown whether that happened.
	ActionRerunning   ActionState = "rerunning"
	ActionRerun       ActionState = "rerun"
	ActionRerunFailed ActionState = "rerun_failed"
)

var actionTransitions = map[ActionState][]ActionState{
	ActionStarted: {ActionDone, ActionFailed},
	// An action is run again after a rollback at most once. A failed
	// action may have changed part of its target, so it can be rolled back
	// or run again too (a restart that failed on the edited config).
	ActionDone:      {ActionRolledBack, ActionRollbackFailed, ActionRerunning},
	ActionFailed:    {ActionRolledBack, ActionRollbackFailed, ActionRerunning},
	ActionRerunning: {ActionRerun, ActionRerunFailed},
}

func canActionTransition(from, to ActionState) bool {
	for _, s := range actionTransitions[from] {
		if s == to {
			return true
		}
	}
	return false
}
