package schedule

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/runbot/runbot/dispatch"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/record"
	"github.com/runbot/runbot/store"
)

// auditResult is what became of one scheduled run.
type auditResult struct {
	RunID   string
	Outcome store.Outcome
	// Signature is the outcome with the diagnoses found, which on_change
	// compares between runs.
	Signature string
	Posted    bool
	// Reason says why the result was posted or kept quiet.
	Reason string
	Err    error
	// Fleet, for a fleet audit, is each deployment's result; Outcome is
	// then the worst of them.
	Fleet []deploymentResult
}

// runAudit runs a schedule's runbook once, in one of the dispatcher's run
// slots, records it like any run (trigger schedule, requested by the
// schedule's name), and posts it, with the remediation its diagnosis
// proposes, when the schedule's policy says so. A run that is not posted
// proposes nothing: a proposal nobody sees would only supersede the one
// that was shown.
func (s *Scheduler) runAudit(ctx context.Context, e *scheduled) auditResult {
	if len(e.fleet) > 0 {
		return s.runFleet(ctx, e)
	}
	var res auditResult
	out := s.disp.RunNow(ctx, dispatch.Direct{
		Runbook: e.Runbook, Params: e.Params, Source: store.TriggerSchedule, RequestedBy: e.Name, Channel: e.Channel,
		Post: func(ctx context.Context, run store.Run, rep *runbooks.Report) (bool, string) {
			res.Signature = signature(run.Outcome, rep)
			rctx, cancel := record.WriteContext(ctx, "reading the previous run of schedule "+e.Name)
			prev, hasPrev, err := s.previous(rctx, e, run)
			cancel()
			post, reason := decidePost(e.Post, run.Outcome, res.Signature, prev, hasPrev)
			if err != nil && !post {
				// Better one message too many than a change nobody hears of.
				s.log.Warn("previous run of the schedule not read; posting", "schedule", e.Name, "err", err)
				post, reason = true, "the previous run could not be read"
			}
			res.Reason = reason
			return post, fmt.Sprintf("Scheduled audit %q (%s): %s.", e.Name, e.Cron, reason)
		},
	})
	res.RunID, res.Outcome, res.Posted, res.Err = out.Run.ID, out.Run.Outcome, out.Posted, out.Err
	return res
}

// signature is what on_change compares: the outcome and the ids of the
// diagnoses found, sorted.
func signature(o store.Outcome, rep *runbooks.Report) string {
	var ids []string
	if rep != nil {
		for _, dg := range rep.Diagnoses {
			ids = append(ids, dg.ID)
		}
	}
	slices.Sort(ids)
	if len(ids) == 0 {
		return string(o)
	}
	return string(o) + " (" + strings.Join(ids, ", ") + ")"
}

// previous finds the signature of the schedule's run before run.
func (s *Scheduler) previous(ctx context.Context, e *scheduled, run store.Run) (string, bool, error) {
	if s.store == nil {
		return "", false, errors.New("scheduler has no store")
	}
	runs, err := s.store.ListRuns(ctx, store.RunFilter{Runbook: e.Runbook, Trigger: store.TriggerSchedule, RequestedBy: e.Name, Limit: 20})
	if err != nil {
		return "", false, err
	}
	for _, r := range runs {
		if r.ID == run.ID || !r.Status.Final() || r.StartedAt.After(run.StartedAt) {
			continue
		}
		var rep *runbooks.Report
		if len(r.Report) > 0 {
			if rep, err = record.ReportOf(r); err != nil {
				return "", false, err
			}
		}
		return signature(r.Outcome, rep), true, nil
	}
	return "", false, nil
}

// decidePost applies a posting policy; the reason is shown with the
// result, or logged when the run is kept quiet.
func decidePost(policy PostPolicy, o store.Outcome, cur, prev string, hasPrev bool) (bool, string) {
	bad := o != store.OutcomeOK
	switch policy {
	case PostAlways:
		return true, "posted on every run"
	case PostOnFailure:
		if bad {
			return true, "the outcome is " + cur
		}
		return false, "ok"
	}
	switch {
	case !hasPrev && bad:
		return true, "first run, and the outcome is " + cur
	case !hasPrev:
		return false, "first run, ok"
	case cur != prev:
		return true, "changed from " + prev + " to " + cur
	}
	return false, "unchanged: " + cur
}
