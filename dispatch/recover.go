package dispatch

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/runbot/runbot/chat"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/store"
)

// recoveredShowTimeout bounds bringing one recovered run's message up to
// date.
const recoveredShowTimeout = time.Minute

// ShowRecovered brings up to date the messages of what store.MarkInterrupted
// recovered at start, so that nothing a dead process left still looks like
// it is running or applying in the chat:
//   - an interrupted run says so, and whether its work runs again (attempt
//     n of store.MaxWorkAttempts) or was given up on;
//   - a run whose report had been stored shows its result, and says it was
//     not run again;
//   - an interrupted plan says it was not re-applied and needs a new
//     approval, with what its actions had done.
//
// It reads what each message should say from the store before it returns:
// call it before Resume, while the requeued work is not claimed yet. The
// chat updates then run in the background, like ShowExpired's.
func (d *Dispatcher) ShowRecovered(ctx context.Context, rec store.Recovery) {
	// One message per run: a run and its plan may both have been
	// recovered, and one update must say everything.
	var order []string
	seen := map[string]bool{}
	add := func(id string) {
		if id != "" && !seen[id] {
			seen[id] = true
			order = append(order, id)
		}
	}
	for _, id := range rec.Runs {
		add(id)
	}
	for _, id := range rec.Finished {
		add(id)
	}
	plans := map[string]store.Plan{}
	for _, id := range rec.Plans {
		p, err := d.store.GetPlan(ctx, id)
		if err != nil {
			d.log.Warn("interrupted plan's message not updated", "plan", id, "err", err)
			continue
		}
		plans[p.RunID] = p
		add(p.RunID)
	}
	for _, runID := range order {
		rs, err := d.recoveredState(ctx, runID, rec, plans)
		if err != nil {
			d.log.Warn("recovered run's message not updated", "run", runID, "err", err)
			continue
		}
		if rs == nil {
			continue
		}
		err = d.tasks.Go("show recovered run", recoveredShowTimeout, func(ctx context.Context) {
			rs, release, _ := d.hold(runID, func() (*runState, error) { return rs, nil })
			defer release()
			d.show(ctx, rs)
		})
		if err != nil {
			d.log.Warn("recovered run's message not updated", "run", runID, "err", err)
		}
	}
}

// recoveredState rebuilds what a recovered run's message shows, or returns
// nil when the run has no message.
func (d *Dispatcher) recoveredState(ctx context.Context, runID string, rec store.Recovery, plans map[string]store.Plan) (*runState, error) {
	run, err := d.store.GetRun(ctx, runID)
	if err != nil {
		return nil, err
	}
	if run.Message == nil {
		d.log.Info("recovered run has no message to update", "run", runID, "status", run.Status)
		return nil, nil
	}
	plan, interrupted := plans[runID]
	if !interrupted {
		newest, err := d.store.ListPlans(ctx, store.PlanFilter{RunID: runID, Limit: 1})
		if err != nil {
			return nil, fmt.Errorf("read plans of run %s: %w", runID, err)
		}
		if len(newest) > 0 {
			plan = newest[0]
		}
	}
	set := d.current()
	var prop *remediation.Proposal
	if plan.ID != "" {
		if prop, err = set.rem.LoadProposal(ctx, plan.ID); err != nil {
			return nil, err
		}
	}
	rb, _ := set.catalog.Get(run.Runbook)
	rs, err := loadRunState(run, rb, prop)
	if err != nil {
		return nil, err
	}
	if prop != nil {
		if rs.Approvals, err = d.store.Approvals(ctx, plan.ID); err != nil {
			return nil, fmt.Errorf("read approvals of plan %s: %w", plan.ID, err)
		}
	}

	switch {
	case run.Status == store.RunInterrupted:
		// No step results survive; listing the steps as waiting would
		// say the run still goes.
		rs.StepOrder = nil
		rs.Problem, err = d.interruptedRunText(ctx, run, rec)
		if err != nil {
			return nil, err
		}
	case rs.Report != nil:
		rs.Notes = append(rs.Notes, "the runbot process that ran this stopped after it had finished; its result stands and it was not run again.")
		if prop == nil && slices.ContainsFunc(rs.Report.Diagnoses, func(dg runbooks.DiagnosisResult) bool { return dg.Remediation != "" }) {
			rs.Notes = append(rs.Notes, "the runbot process that ran this stopped before it proposed the remediation: run the runbook again for a plan to approve.")
		}
	}
	if interrupted {
		actions, err := d.store.Actions(ctx, plan.ID)
		if err != nil {
			return nil, fmt.Errorf("read actions of plan %s: %w", plan.ID, err)
		}
		rs.Apply, rs.Result = interruptedPlanText(plan, actions)
	}
	rs.live = d.liveMessage(chat.Ref(*run.Message))
	return rs, nil
}

// interruptedRunText says what happened to a run cut short and to the work
// it carried out.
func (d *Dispatcher) interruptedRunText(ctx context.Context, run store.Run, rec store.Recovery) (string, error) {
	const what = "interrupted: the runbot process carrying it stopped (restarted, crashed, or a replica lost) while this run was in progress, before its report was stored"
	if run.WorkID == "" {
		return what + ". It is not run again.", nil
	}
	w, err := d.store.GetWork(ctx, run.WorkID)
	if err != nil {
		return "", err
	}
	switch {
	case slices.Contains(rec.Requeued, w.ID):
		// Read before Resume: Attempts counts the claims so far.
		return fmt.Sprintf("%s. It runs again as attempt %d of %d, in a new message.", what, w.Attempts+1, store.MaxWorkAttempts), nil
	case slices.Contains(rec.Abandoned, w.ID):
		return fmt.Sprintf("%s, for the %s time. It is not run again: it may be what stops runbot. Run it by hand if it is still needed.",
			what, ordinal(w.Attempts)), nil
	}
	return what + ".", nil
}

// interruptedPlanText shows an interrupted plan's actions as far as the
// record goes, and says it will not be resumed.
func interruptedPlanText(plan store.Plan, actions []store.ActionRecord) ([]remediation.ApplyEvent, *remediation.ApplyResult) {
	var events []remediation.ApplyEvent
	stage := "verifying it"
	if len(actions) == 0 {
		stage = "applying it"
	}
	for _, a := range actions {
		detail := fmt.Sprintf("%s on %s: %s", a.Action, a.Target, a.State)
		if a.State == store.ActionStarted {
			// Written before the side effect: it may or may not have
			// happened.
			detail += " (it may or may not have taken effect)"
			stage = "applying it"
		}
		// An interrupted plan is told action by action ("action N").
		events = append(events, remediation.ApplyEvent{Stage: remediation.ApplyStage(fmt.Sprintf("action %d", a.Index+1)), Detail: detail})
	}
	return events, &remediation.ApplyResult{PlanID: plan.ID, State: store.PlanInterrupted,
		Message: "interrupted: the runbot process carrying it stopped (restarted, crashed, or a replica lost) while " + stage + "; not re-applied, a new approval is needed (run the runbook again for a new plan). Check the targets: they may be half-changed."}
}

func ordinal(n int) string {
	switch n {
	case 1:
		return "first"
	case 2:
		return "second"
	case 3:
		return "third"
	}
	return fmt.Sprintf("%dth", n)
}
