package bot

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/runbot/runbot/runbooks"
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
}

// runAudit runs a schedule's runbook once, in one of the dispatcher's run
// slots, records it like any run (trigger schedule, requested by the
// schedule's name), and posts it, with the remediation its diagnosis
// proposes, when the schedule's policy says so. A run that is not posted
// proposes nothing: a proposal nobody sees would only supersede the one
// that was shown.
func (s *Scheduler) runAudit(ctx context.Context, e *scheduled) auditResult {
	d := s.disp
	select {
	case d.slots <- struct{}{}:
	case <-ctx.Done():
		return auditResult{Err: fmt.Errorf("wait for a run slot: %w", context.Cause(ctx))}
	}
	defer func() { <-d.slots }()

	rb, nf := d.runbook(e.Runbook)
	var (
		decided     bool
		post        bool
		reason      string
		signatureOf string
	)
	decide := func(ctx context.Context, run store.Run, rep *runbooks.Report) {
		decided = true
		signatureOf = signature(run.Outcome, rep)
		rctx, cancel := recording(ctx, "reading the previous run of schedule "+e.Name)
		prev, hasPrev, err := s.previous(rctx, e, run)
		cancel()
		post, reason = decidePost(e.Post, run.Outcome, signatureOf, prev, hasPrev)
		if err != nil && !post {
			// Better one message too many than a change nobody hears of.
			s.log.Warn("previous run of the schedule not read; posting", "schedule", e.Name, "err", err)
			post, reason = true, "the previous run could not be read"
		}
	}
	out := d.recorder.Record(ctx, runbooks.Record{
		ID: runbooks.NewRunID(s.now()), Runbook: e.Runbook, Book: rb, NotFound: nf, Params: e.Params,
		Trigger: store.TriggerSchedule, RequestedBy: e.Name,
		// A run that is not posted proposes nothing.
		Propose: func(ctx context.Context, soFar runbooks.Recorded) bool {
			if soFar.Err != nil {
				return false
			}
			decide(ctx, soFar.Run, soFar.Report)
			return post
		},
	})
	if out.Run.ID == "" {
		return auditResult{Err: out.Err}
	}
	if out.Err != nil {
		return auditResult{RunID: out.Run.ID, Err: out.Err}
	}
	run, rep := out.Run, out.Report
	rs := newRunState(run, rb)
	rs.report = rep
	if out.StartErr != nil {
		rs.problem = "could not start: " + out.StartErr.Error()
	}
	if !decided {
		decide(ctx, run, rep)
	}
	res := auditResult{RunID: run.ID, Outcome: run.Outcome, Signature: signatureOf, Reason: reason}
	if !post {
		return res
	}
	switch {
	case out.ProposeErr != nil:
		rs.problem = "could not propose the remediation: " + out.ProposeErr.Error()
	case out.Proposal != nil:
		rs.proposal, rs.plan = out.Proposal, out.Proposal.Plan
	}
	channel := e.Channel
	if channel == "" {
		channel = d.channel
	}
	if channel == "" {
		res.Err = fmt.Errorf("no channel to post to (configure the schedule's or the bot's channel)")
		return res
	}
	rs.mu.Lock()
	m := rs.view()
	rs.mu.Unlock()
	m.Notes = append(m.Notes, fmt.Sprintf("Scheduled audit %q (%s): %s.", e.Name, e.Cron, reason))
	pctx, cancel := recording(ctx, "posting run "+run.ID)
	ts, err := d.msgr.post(pctx, channel, "", m)
	cancel()
	if err != nil {
		res.Err = fmt.Errorf("post the result: %w", err)
		return res
	}
	sctx, cancel := recording(ctx, "recording the message of run "+run.ID)
	defer cancel()
	if err := d.store.SetRunMessage(sctx, run.ID, store.MessageRef{Platform: slackPlatform, Channel: channel, ID: ts}); err != nil {
		s.log.Warn("record run message", "run", run.ID, "err", err)
	}
	res.Posted = true
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
	runs, err := s.disp.store.ListRuns(ctx, store.RunFilter{Runbook: e.Runbook, Trigger: store.TriggerSchedule, Limit: 200})
	if err != nil {
		return "", false, err
	}
	for _, r := range runs {
		if r.ID == run.ID || r.RequestedBy != e.Name || !r.Status.Final() || r.StartedAt.After(run.StartedAt) {
			continue
		}
		var rep *runbooks.Report
		if len(r.Report) > 0 {
			if rep, err = runbooks.ReportOf(r); err != nil {
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
