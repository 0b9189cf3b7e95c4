package dispatch

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/runbot/runbot/chat"
	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/store"
)

// Vote is one person's click on Approve or Deny of a proposed plan.
type Vote struct {
	PlanID string
	// Hash is the plan hash the voter was shown (carried by the button).
	Hash    string
	User    string
	Approve bool
	// From, when set, is where a vote not cast by a click came from (a
	// report page): it is recorded through Remediator.VoteFrom, which
	// audits its source after the vote.
	From *remediation.Source
}

// VoteResult says what became of a vote. Refusal, when set, is the reason
// it was not counted, for the voter's eyes; nothing changed.
type VoteResult struct {
	Refusal   string
	State     store.PlanState
	Approvals int
	Needed    int
	// Applied is set when this vote settled the plan as approved and the
	// remediation was carried out; Result says how that went.
	Applied bool
	Result  *remediation.ApplyResult
}

// RecordedVote is a vote the store has recorded, or refused, waiting for
// FinishVote to show it and to apply the plan it settled.
type RecordedVote struct {
	vote Vote
	res  store.ApprovalResult
	err  error
	// unaudited is a vote From a source whose source entry could not be
	// written: the vote stands, and FinishVote goes on with it.
	unaudited error
}

// Result is what the store said of the vote: the plan, the approvals and
// whether the vote settled it, and the refusal or the failure. A vote From
// a source whose entry could not be written stands, and its error wraps
// remediation.ErrSourceNotAudited.
func (rv RecordedVote) Result() (store.ApprovalResult, error) {
	return rv.res, errors.Join(rv.err, rv.unaudited)
}

// RecordVote records a vote through the Remediator (the same path as the
// CLI). It is the part of a vote that must not be lost, so a chat handler
// calls it before the platform is told the click arrived: a replica that
// dies after that leaves the vote in the store, where the recovery sweep
// applies a plan it settled. The store's compare-and-set makes a double
// click count once.
func (d *Dispatcher) RecordVote(ctx context.Context, v Vote) RecordedVote {
	rem := d.current().rem
	if v.From == nil {
		res, err := rem.Vote(ctx, v.PlanID, v.User, v.Approve, v.Hash)
		return RecordedVote{vote: v, res: res, err: err}
	}
	res, err := rem.VoteFrom(ctx, *v.From, v.PlanID, v.User, v.Approve, v.Hash)
	if errors.Is(err, remediation.ErrSourceNotAudited) && refusalText(err, res.Plan) == "" {
		// Only the entry saying where the vote came from is missing.
		return RecordedVote{vote: v, res: res, unaudited: err}
	}
	return RecordedVote{vote: v, res: res, err: err}
}

// FinishVote updates the run's message for a recorded vote and, when the
// vote settled the plan as approved, applies it with live progress and
// shows the outcome. A store failure while recording is its error.
func (d *Dispatcher) FinishVote(ctx context.Context, rv RecordedVote) (VoteResult, error) {
	v, res, err := rv.vote, rv.res, rv.err
	refusal := refusalText(err, res.Plan)
	if err != nil && refusal == "" {
		return VoteResult{}, fmt.Errorf("vote on plan %s: %w", v.PlanID, err)
	}
	out := VoteResult{Refusal: refusal, State: res.Plan.State, Approvals: res.Approvals, Needed: res.Needed}
	var se *store.ApprovalError
	changed := err == nil || (errors.As(err, &se) && (se.Reason == store.RefusedExpired || se.Reason == store.RefusedClosed))
	if !changed {
		return out, nil
	}
	rs, release, herr := d.hold(res.Plan.RunID, func() (*runState, error) { return d.loadPlanState(ctx, v.PlanID) })
	if herr != nil {
		return out, fmt.Errorf("show vote on plan %s: %w", v.PlanID, herr)
	}
	defer release()
	d.reloadPlan(ctx, rs)
	rs.publish()
	if err != nil || !res.Settled || res.Plan.State != store.PlanApproved {
		return out, nil
	}
	if v.From != nil {
		// The sweep applies a plan approved away from chat at once
		// (remediation.ApprovedFrom): of this vote's apply and the
		// sweep's in this process, the first to get here applies it.
		if _, busy := d.sweepApplying.LoadOrStore(v.PlanID, true); busy {
			return out, nil
		}
		defer d.sweepApplying.Delete(v.PlanID)
	}
	out.Applied = true
	out.Result = d.apply(ctx, rs, v.PlanID, v.User)
	if out.Result != nil {
		out.State = out.Result.State
	}
	return out, nil
}

// Vote records a vote and finishes it (RecordVote, then FinishVote) under
// one context.
func (d *Dispatcher) Vote(ctx context.Context, v Vote) (VoteResult, error) {
	return d.FinishVote(ctx, d.RecordVote(ctx, v))
}

// apply carries out an approved plan, showing each stage as it happens.
func (d *Dispatcher) apply(ctx context.Context, rs *runState, planID, actor string) *remediation.ApplyResult {
	log := d.log.With("plan", planID, "run", rs.Run.ID)
	log.Info("applying approved remediation", "actor", actor)
	rs.mu.Lock()
	rs.Applying = true
	rs.mu.Unlock()
	rs.publish()
	// The apply takes the set current when it starts (the runbook and the
	// inventory a reload since the proposal installed: Apply re-plans and
	// compares the hash with what was approved) and keeps it to its end.
	// A lease about to lapse stops the apply (Fence): another replica may
	// take the deployment lock over once it has.
	actx, fenced := d.applies.guard(ctx)
	res, err := d.current().rem.Apply(actx, planID, actor, func(ev remediation.ApplyEvent) {
		rs.mu.Lock()
		rs.Apply = append(rs.Apply, ev)
		rs.mu.Unlock()
		rs.publish()
	})
	fenced()
	after, cancel := recording(ctx, "showing the outcome of plan "+planID)
	defer cancel()
	rs.mu.Lock()
	rs.Applying = false
	rs.Result = res
	var conflict *store.StateConflictError
	switch {
	case err != nil && (errors.As(err, &conflict) || errors.Is(err, remediation.ErrNotApproved)):
		// Someone else moved the plan first (between the vote or the sweep
		// that found it approved and this claim, another replica's sweep
		// claimed it); their apply reports itself.
		log.Info("plan already being applied elsewhere", "err", err)
		rs.Result = nil
	case err != nil && (res == nil || res.Message == ""):
		rs.ApplyErr = err.Error()
	}
	rs.mu.Unlock()
	if err != nil {
		log.Warn("remediation did not succeed", "err", err)
	} else {
		log.Info("remediation finished", "state", res.State, "recovered", res.Recovered)
	}
	d.reloadPlan(after, rs)
	d.show(after, rs)
	return res
}

// loadPlanState rebuilds the state of the run that proposed a plan.
func (d *Dispatcher) loadPlanState(ctx context.Context, planID string) (*runState, error) {
	set := d.current()
	prop, err := set.rem.LoadProposal(ctx, planID)
	if err != nil {
		return nil, err
	}
	run, err := d.store.GetRun(ctx, prop.Plan.RunID)
	if err != nil {
		return nil, err
	}
	rb, _ := set.catalog.Get(run.Runbook)
	rs, err := loadRunState(run, rb, prop)
	if err != nil {
		return nil, err
	}
	if run.Message != nil {
		rs.live = d.liveMessage(chat.Ref(*run.Message))
	}
	return rs, nil
}

// reloadPlan reads the plan's state and approvals afresh, so the message
// shows the truth even when several clicks raced.
func (d *Dispatcher) reloadPlan(ctx context.Context, rs *runState) {
	rs.mu.Lock()
	id := rs.Plan.ID
	rs.mu.Unlock()
	if id == "" {
		return
	}
	plan, err := d.store.GetPlan(ctx, id)
	if err != nil {
		d.log.Warn("reload plan", "plan", id, "err", err)
		return
	}
	approvals, err := d.store.Approvals(ctx, id)
	if err != nil {
		d.log.Warn("reload approvals", "plan", id, "err", err)
		return
	}
	rs.mu.Lock()
	rs.Plan, rs.Approvals = plan, approvals
	rs.mu.Unlock()
}

// refusalText explains a refused vote to the voter, or returns "" when err
// is not a refusal.
func refusalText(err error, plan store.Plan) string {
	var se *store.ApprovalError
	switch {
	case err == nil:
		return ""
	case !errors.As(err, &se):
		if errors.Is(err, store.ErrNotFound) {
			return "This plan no longer exists."
		}
		return ""
	case se.Reason == store.RefusedPolicy && errors.Is(se.Err, remediation.ErrNotApprover):
		return fmt.Sprintf("You are not an approver of this remediation (approvers: %s). Nothing was changed.", strings.Join(plan.Policy.Approvers, ", "))
	case se.Reason == store.RefusedPolicy && errors.Is(se.Err, remediation.ErrApproversUnknown):
		why := strings.TrimPrefix(se.Err.Error(), remediation.ErrApproversUnknown.Error()+": ")
		return "Could not check whether you may approve (" + why + "), so your vote was not counted. Nothing was changed; try again."
	case se.Reason == store.RefusedPolicy:
		return ""
	case se.Reason == store.RefusedSelf:
		return "The two-person rule applies: whoever requested the run cannot approve its remediation. Another approver has to. Nothing was changed."
	case se.Reason == store.RefusedStale:
		return "This plan changed since it was shown to you, so your vote was not counted. Look at the current message (or run the runbook again)."
	case se.Reason == store.RefusedExpired:
		return "The approval window for this plan has closed. Run the runbook again for a fresh plan."
	default:
		return fmt.Sprintf("This plan is %s; votes are no longer taken.", strings.ReplaceAll(string(se.State), "_", " "))
	}
}
