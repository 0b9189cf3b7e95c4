package bot

import (
	"context"
	"encoding/json"
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

	rb, err := d.runbook(e.Runbook)
	var p *runbooks.Prepared
	if err == nil {
		p, err = d.engine.Prepare(ctx, rb, e.Params)
	}
	params := e.Params
	if p != nil {
		params = p.Text
	}
	run, cerr := d.store.CreateRun(ctx, store.Run{
		ID: runbooks.NewRunID(s.now()), Runbook: e.Runbook, Trigger: store.TriggerSchedule, RequestedBy: e.Name, Params: params,
	})
	if cerr != nil {
		return auditResult{Err: fmt.Errorf("record run: %w", cerr)}
	}
	rs := newRunState(run, rb)
	var rep *runbooks.Report
	if err != nil {
		rs.problem = "could not start: " + err.Error()
		rctx, cancel := recording(ctx, "recording the end of run "+run.ID)
		run, err = d.store.FinishRun(rctx, run.ID, store.RunFailed, store.OutcomeError, nil)
		cancel()
		if err != nil {
			return auditResult{RunID: rs.run.ID, Err: fmt.Errorf("record run end: %w", err)}
		}
	} else {
		rep = d.engine.Run(ctx, p, runbooks.RunOptions{RunID: run.ID, Trigger: string(store.TriggerSchedule)})
		status := store.RunFinished
		if ctx.Err() != nil {
			status = store.RunCanceled
		}
		raw, err := json.Marshal(rep)
		if err != nil {
			return auditResult{RunID: run.ID, Err: fmt.Errorf("encode report: %w", err)}
		}
		// The deadline starts now, not with the run: a run may take
		// longer than recording its end may.
		rctx, cancel := recording(ctx, "recording the end of run "+run.ID)
		run, err = d.store.FinishRun(rctx, run.ID, status, store.Outcome(rep.Outcome), raw)
		cancel()
		if err != nil {
			return auditResult{RunID: rs.run.ID, Err: fmt.Errorf("record run end: %w", err)}
		}
		rs.report = rep
	}
	rs.run = run
	res := auditResult{RunID: run.ID, Outcome: run.Outcome, Signature: signature(run.Outcome, rep)}

	rctx, cancel := recording(ctx, "reading the previous run of schedule "+e.Name)
	prev, hasPrev, err := s.previous(rctx, e, run)
	cancel()
	post, reason := decidePost(e.Post, run.Outcome, res.Signature, prev, hasPrev)
	if err != nil && !post {
		// Better one message too many than a change nobody hears of.
		s.log.Warn("previous run of the schedule not read; posting", "schedule", e.Name, "err", err)
		post, reason = true, "the previous run could not be read"
	}
	res.Reason = reason
	if !post {
		return res
	}
	if rep != nil && ctx.Err() == nil {
		prop, err := d.rem.Propose(ctx, p, rep, e.Name)
		switch {
		case err != nil:
			rs.problem = "could not propose the remediation: " + err.Error()
		case prop != nil:
			rs.proposal, rs.plan = prop, prop.Plan
		}
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
