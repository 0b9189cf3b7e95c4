package dispatch

import (
	"context"
	"errors"
	"fmt"

	"github.com/runbot/runbot/chat"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/engine"
	"github.com/runbot/runbot/runbooks/record"
	"github.com/runbot/runbot/store"
)

// Direct is a run that a trigger waits for (a scheduled audit), instead of
// queueing it: it runs in one of the dispatcher's run slots, is recorded
// through the same path as queued work, and is posted only when Post says
// so.
type Direct struct {
	Runbook     string
	Params      map[string]string
	Source      store.Trigger
	RequestedBy string
	// Channel is where the run is posted; the dispatcher's when empty.
	Channel string
	// Post decides, once the run is recorded, whether to post it (and to
	// propose the remediation its diagnosis asks for: a proposal nobody
	// sees would only supersede the one that was shown), and with which
	// note. Nil posts every run.
	Post func(ctx context.Context, run store.Run, rep *runbooks.Report) (post bool, note string)
}

// DirectResult says what became of a Direct run.
type DirectResult struct {
	Run    store.Run
	Report *runbooks.Report
	// Posted says whether the run was posted to the chat; Note is what
	// Post said.
	Posted bool
	Note   string
	Err    error
}

// RunNow runs req in a run slot, records it and posts it as req.Post
// decides. Without a chat, a run to post is logged instead.
func (d *Dispatcher) RunNow(ctx context.Context, req Direct) DirectResult {
	if !req.Source.Valid() {
		return DirectResult{Err: fmt.Errorf("run %s: invalid source %q", req.Runbook, req.Source)}
	}
	select {
	case d.slots <- struct{}{}:
	case <-ctx.Done():
		return DirectResult{Err: fmt.Errorf("wait for a run slot: %w", context.Cause(ctx))}
	}
	defer func() { <-d.slots }()

	var (
		decided bool
		post    = true
		note    string
	)
	decide := func(ctx context.Context, run store.Run, rep *runbooks.Report) {
		decided = true
		if req.Post != nil {
			post, note = req.Post(ctx, run, rep)
		}
	}
	// The run keeps the set current now to its end, whatever a reload
	// installs meanwhile.
	set := d.current()
	rb, nf := set.runbook(req.Runbook)
	out := set.recorder.Record(ctx, record.Record{
		ID: engine.NewRunID(d.now()), Runbook: req.Runbook, Book: rb, NotFound: nf, Params: req.Params,
		Trigger: req.Source, RequestedBy: req.RequestedBy,
		Propose: func(ctx context.Context, soFar record.Recorded) bool {
			if soFar.Err != nil {
				return false
			}
			decide(ctx, soFar.Run, soFar.Report)
			return post
		},
	})
	if out.Run.ID == "" || out.Err != nil {
		return DirectResult{Run: out.Run, Report: out.Report, Err: out.Err}
	}
	run, rep := out.Run, out.Report
	if !decided {
		decide(ctx, run, rep)
	}
	res := DirectResult{Run: run, Report: rep, Note: note}
	if !post {
		return res
	}
	rs := newRunState(run, rb)
	rs.SetReport(rep)
	switch {
	case out.StartErr != nil:
		rs.Problem = "could not start: " + out.StartErr.Error()
	case out.ProposeErr != nil:
		rs.Problem = "could not propose the remediation: " + out.ProposeErr.Error()
	case out.Proposal != nil:
		rs.Proposal, rs.Plan = out.Proposal, out.Proposal.Plan
	}
	m := rs.Message()
	if note != "" {
		m.Notes = append(m.Notes, note)
	}
	res.Posted, res.Err = d.postRecorded(ctx, run, m, req.Channel, "")
	return res
}

// ProposeInThread proposes the remediation a recorded run's diagnosis asks
// for and posts the run, with the plan and its approval buttons, as a
// reply in thread: a message the trigger posted itself, such as a fleet
// audit's one message for all its deployments, under which each changed
// deployment that needs a fix gets its own plan to approve. It posts
// nothing and returns false when the diagnosis asks for no remediation.
// The run's message becomes the reply, so that votes and the apply update
// it there. params are the params the run was given: the stored run keeps
// its secret ones masked.
func (d *Dispatcher) ProposeInThread(ctx context.Context, run store.Run, params map[string]string, rep *runbooks.Report, channel, thread string) (bool, error) {
	set := d.current()
	rb, nf := set.runbook(run.Runbook)
	if nf != nil {
		return false, nf
	}
	p, err := set.engine.Prepare(ctx, rb, params)
	if err != nil {
		return false, fmt.Errorf("propose for run %s: %w", run.ID, err)
	}
	prop, perr := set.rem.Propose(ctx, p, rep, run.RequestedBy)
	if prop == nil && perr == nil {
		return false, nil
	}
	rs := newRunState(run, rb)
	rs.SetReport(rep)
	if perr != nil {
		rs.Problem = "could not propose the remediation: " + perr.Error()
	} else {
		rs.Proposal, rs.Plan = prop, prop.Plan
	}
	return d.postRecorded(ctx, run, rs.Message(), channel, thread)
}

// postRecorded posts a recorded run's message (in thread when set) and
// records where it went; without a chat it is logged instead.
func (d *Dispatcher) postRecorded(ctx context.Context, run store.Run, m chat.Message, channel, thread string) (bool, error) {
	if d.chat == nil {
		// Only the outcome: the message holds evidence (what commands
		// printed) and params, which may hold secrets that only a chat
		// platform's redaction would have removed. The store has it all.
		d.log.Info("run result (no chat configured)", "run", run.ID, "runbook", run.Runbook, "outcome", run.Outcome, "details", "runbot show "+run.ID)
		return false, nil
	}
	if channel == "" {
		channel = d.channel
	}
	if channel == "" {
		return false, errors.New("no channel to post to (configure the schedule's or the bot's channel)")
	}
	pctx, cancel := recording(ctx, "posting run "+run.ID)
	ref, err := d.chat.Post(pctx, channel, thread, m)
	cancel()
	if err != nil {
		return false, fmt.Errorf("post the result: %w", err)
	}
	sctx, cancel := recording(ctx, "recording the message of run "+run.ID)
	defer cancel()
	if err := d.store.SetRunMessage(sctx, run.ID, store.MessageRef(ref)); err != nil {
		d.recordMessageLater(d.log.With("run", run.ID), run.ID, ref, err)
	}
	return true, nil
}
