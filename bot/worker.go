package bot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/store"
)

// recordTimeout bounds one store write or one Slack update that records how
// a run ended. Each gets its own deadline, started right before it, and
// detached from the run's context: they happen even when the run's own
// deadline has passed, however long the run took.
const recordTimeout = 30 * time.Second

// recording returns a context for one write that records a run's end,
// bounded by recordTimeout from now; the cause names what took too long.
func recording(ctx context.Context, what string) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(context.WithoutCancel(ctx), recordTimeout,
		fmt.Errorf("%s took longer than %s", what, recordTimeout))
}

// execute runs one claimed piece of work: it creates the run, posts its
// message, runs the runbook with live progress, records the report,
// proposes the remediation a diagnosis asks for, and shows all of it.
func (d *Dispatcher) execute(ctx context.Context, w store.Work) {
	log := d.log.With("work", w.ID, "runbook", w.Runbook)
	defer func() {
		// Marked done last: a process that dies before this line leaves
		// the work started, and the next start's recovery sees from the
		// run whether its report was stored.
		rctx, cancel := recording(ctx, "marking work "+w.ID+" done")
		defer cancel()
		if _, err := d.store.CompleteWork(rctx, w.ID); err != nil {
			log.Error("mark work done", "err", err)
		}
	}()
	var pl workPayload
	if len(w.Payload) > 0 {
		if err := json.Unmarshal(w.Payload, &pl); err != nil {
			log.Warn("work payload unreadable; posting to the default channel", "err", err)
		}
	}
	if pl.Channel == "" {
		pl.Channel = d.channel
	}

	// Validate again: the runbook or the inventory may have changed since
	// the request was queued (or before a restart).
	rb, err := d.runbook(w.Runbook)
	var p *runbooks.Prepared
	if err == nil {
		p, err = d.engine.Prepare(ctx, rb, w.Params)
	}
	params := w.Params
	if p != nil {
		params = p.Text
	}
	run, cerr := d.store.CreateRun(ctx, store.Run{
		ID: runbooks.NewRunID(d.now()), Runbook: w.Runbook, Trigger: w.Trigger, RequestedBy: w.RequestedBy, Params: params, WorkID: w.ID,
	})
	if cerr != nil {
		log.Error("record run", "err", cerr)
		return
	}
	log = log.With("run", run.ID)
	rs, release, _ := d.hold(run.ID, func() (*runState, error) { return newRunState(run, rb), nil })
	defer release()
	if w.Attempts > 1 {
		rs.mu.Lock()
		rs.notes = append(rs.notes, retryNote(w))
		rs.mu.Unlock()
	}
	d.postRun(ctx, rs, pl)

	if err != nil {
		log.Warn("run could not start", "err", err)
		rs.mu.Lock()
		rs.problem = "could not start: " + err.Error()
		rs.mu.Unlock()
		d.finish(ctx, rs, store.RunFailed, store.OutcomeError, nil)
		d.showFinal(ctx, rs)
		return
	}

	log.Info("run started")
	rep := d.engine.Run(ctx, p, runbooks.RunOptions{RunID: run.ID, Trigger: string(w.Trigger), Progress: func(ev runbooks.Event) {
		rs.stepEvent(ev)
		rs.publish()
	}})
	status := store.RunFinished
	if ctx.Err() != nil {
		status = store.RunCanceled
	}
	raw, err := json.Marshal(rep)
	if err != nil {
		log.Error("encode report", "err", err)
		raw = nil
	}
	d.finish(ctx, rs, status, store.Outcome(rep.Outcome), raw)
	rs.mu.Lock()
	rs.report = rep
	rs.mu.Unlock()
	log.Info("run finished", "outcome", rep.Outcome, "status", status)

	if ctx.Err() == nil {
		prop, err := d.rem.Propose(ctx, p, rep, w.RequestedBy)
		rs.mu.Lock()
		switch {
		case err != nil:
			log.Warn("remediation not proposed", "err", err)
			rs.problem = "could not propose the remediation: " + err.Error()
		case prop != nil:
			log.Info("remediation proposed", "plan", prop.Plan.ID, "remediation", prop.Body.Remediation)
			rs.proposal, rs.plan = prop, prop.Plan
		}
		rs.mu.Unlock()
	}
	d.showFinal(ctx, rs)
	d.postTimeline(rs, pl)
}

// finish records how a run ended, under a deadline that starts now.
func (d *Dispatcher) finish(ctx context.Context, rs *runState, status store.RunStatus, o store.Outcome, report json.RawMessage) {
	id := rs.run.ID
	rctx, cancel := recording(ctx, "recording the end of run "+id)
	defer cancel()
	if _, err := d.store.FinishRun(rctx, id, status, o, report); err != nil {
		d.log.Error("record run end", "run", id, "err", err)
	}
}

// showFinal brings a run's message up to date after the run ended, under a
// deadline that starts now.
func (d *Dispatcher) showFinal(ctx context.Context, rs *runState) {
	rctx, cancel := recording(ctx, "updating the message of run "+rs.run.ID)
	defer cancel()
	d.show(rctx, rs)
}

// retryNote tells the readers of a run that it carries out work a restart
// cut short before, and how many tries are left.
func retryNote(w store.Work) string {
	prev := ""
	if w.RunID != "" {
		prev = " (run " + w.RunID + ")"
	}
	return fmt.Sprintf("Attempt %d of %d: runbot restarted while the previous attempt%s was in progress, so it runs again.",
		w.Attempts, store.MaxWorkAttempts, prev)
}

// postRun posts the run's first message and records where it is. A run
// whose message cannot be posted still runs; the requester is told why.
func (d *Dispatcher) postRun(ctx context.Context, rs *runState, pl workPayload) {
	rs.mu.Lock()
	run, msg := rs.run, rs.view()
	rs.mu.Unlock()
	log := d.log.With("run", run.ID)
	if pl.Channel == "" {
		log.Warn("run has no channel to post to (configure the bot's channel)")
		return
	}
	ts, err := d.msgr.post(ctx, pl.Channel, pl.ThreadTS, msg)
	if err != nil {
		log.Warn("run message not posted", "channel", pl.Channel, "err", err)
		if pl.ResponseURL != "" {
			note := Message{Title: "Could not post the run in this channel", Status: StatusError, Sections: []Section{{
				Text: fmt.Sprintf("Slack said: %v. Invite the bot to this channel (/invite) or run it from a channel it is in. The run goes on: see status %s.", err, run.ID),
			}}}
			if rerr := d.msgr.respond(ctx, pl.ResponseURL, note); rerr != nil {
				log.Warn("requester not told", "err", rerr)
			}
		}
		return
	}
	if err := d.store.SetRunMessage(ctx, run.ID, store.MessageRef{Platform: slackPlatform, Channel: pl.Channel, ID: ts}); err != nil {
		log.Warn("record run message", "err", err)
	}
	rs.mu.Lock()
	rs.run.Message = &store.MessageRef{Platform: slackPlatform, Channel: pl.Channel, ID: ts}
	rs.live = newLiveMessage(d.msgr, d.tasks, d.log, pl.Channel, ts, d.gap)
	rs.mu.Unlock()
}

// show publishes the run's state and waits until Slack has it.
func (d *Dispatcher) show(ctx context.Context, rs *runState) {
	rs.publish()
	rs.mu.Lock()
	live := rs.live
	rs.mu.Unlock()
	if live == nil {
		return
	}
	if err := live.flush(ctx); err != nil && !errors.Is(err, context.Canceled) {
		d.log.Warn("run message not brought up to date", "run", rs.run.ID, "err", err)
	}
}
