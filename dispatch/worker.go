package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/runbot/runbot/chat"
	"github.com/runbot/runbot/runbooks/engine"
	"github.com/runbot/runbot/runbooks/record"
	"github.com/runbot/runbot/runview"
	"github.com/runbot/runbot/store"
)

// recording returns a context for one write (to the store or the chat)
// that records a run's end, bounded by record.WriteTimeout from now;
// the cause names what took too long.
func recording(ctx context.Context, what string) (context.Context, context.CancelFunc) {
	return record.WriteContext(ctx, what)
}

// execute runs one claimed piece of work: it creates the run, posts its
// message, runs the runbook with live progress, records the report,
// proposes the remediation a diagnosis asks for, and shows all of it.
// It calls free once the run has ended and its report is recorded: the
// run's slot goes to the next queued run then, not after the chat has
// been brought up to date, which Slack's pace of about one update per
// second per message would otherwise make the cost of every run. The
// work is still marked done only after the message is up to date.
func (d *Dispatcher) execute(ctx context.Context, w store.Work, free func()) {
	log := d.log.With("work", w.ID, "runbook", w.Runbook)
	// unrecorded is the end of the run when the store did not take it;
	// notRun says the run was never recorded, so nothing of it ran.
	var (
		unrecorded *record.End
		notRun     bool
	)
	defer func() {
		if notRun {
			d.returnLater(log, w.ID)
			return
		}
		// Marked done last: a process that dies before this line leaves
		// the work started, and the next start's recovery sees from the
		// run whether its report was stored.
		if unrecorded == nil {
			rctx, cancel := recording(ctx, "marking work "+w.ID+" done")
			_, err := d.store.CompleteWork(rctx, w.ID)
			cancel()
			if err == nil {
				return
			}
			log.Error("mark work done; trying again until the store takes it", "err", err)
		}
		d.recordLater(log, unrecorded, w.ID)
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

	// Validate again (Record prepares): the runbook or the inventory may
	// have changed since the request was queued (a reload, or a restart).
	// The run keeps the set current now to its end, whatever a reload
	// installs meanwhile.
	set := d.current()
	rb, nf := set.runbook(w.Runbook)
	var rs *runState
	var release func()
	out := set.recorder.Record(ctx, record.Record{
		ID: engine.NewRunID(d.now()), Runbook: w.Runbook, Book: rb, NotFound: nf, Params: w.Params,
		Trigger: w.Trigger, RequestedBy: w.RequestedBy, WorkID: w.ID,
		Created: func(ctx context.Context, run store.Run) {
			rs, release, _ = d.hold(run.ID, func() (*runState, error) { return newRunState(run, rb), nil })
			if w.Attempts > 1 {
				rs.mu.Lock()
				rs.Notes = append(rs.Notes, retryNote(w))
				rs.mu.Unlock()
			}
			if !pl.Quiet {
				d.postRun(ctx, rs, pl)
			}
		},
		Progress: func(ev engine.Event) {
			rs.stepEvent(ev)
			rs.publish()
		},
	})
	if rs == nil {
		// Recording the run is the first thing it does: nothing ran, and
		// the work goes back to the queue rather than being marked done
		// with no run (an alert accepted and never run).
		log.Error("record run; the work goes back to the queue", "err", out.Err)
		notRun = true
		return
	}
	defer release()
	log = log.With("run", out.Run.ID)
	unrecorded = out.Unrecorded
	if out.Err != nil {
		log.Error("record run", "err", out.Err)
	}
	if out.StartErr != nil {
		log.Warn("run could not start", "err", out.StartErr)
		rs.mu.Lock()
		rs.Problem = "could not start: " + out.StartErr.Error()
		rs.mu.Unlock()
		free()
		d.speakUp(ctx, rs, pl)
		d.showFinal(ctx, rs)
		d.announceEnd(rs, w)
		return
	}
	rs.mu.Lock()
	rs.SetReport(out.Report)
	switch {
	case out.ProposeErr != nil:
		log.Warn("remediation not proposed", "err", out.ProposeErr)
		rs.Problem = "could not propose the remediation: " + out.ProposeErr.Error()
	case out.Proposal != nil:
		log.Info("remediation proposed", "plan", out.Proposal.Plan.ID, "remediation", out.Proposal.Body.Remediation)
		rs.Proposal, rs.Plan = out.Proposal, out.Proposal.Plan
	}
	rs.mu.Unlock()
	log.Info("run finished", "outcome", out.Report.Outcome, "status", out.Run.Status)
	free()
	if rs.Proposal != nil || rs.Problem != "" {
		d.speakUp(ctx, rs, pl)
	}
	d.showFinal(ctx, rs)
	d.postTimeline(rs, pl)
	d.announceEnd(rs, w)
}

// speakUp posts the message of a quiet run that someone must act on.
func (d *Dispatcher) speakUp(ctx context.Context, rs *runState, pl workPayload) {
	if !pl.Quiet {
		return
	}
	rctx, cancel := recording(ctx, "posting the message of run "+rs.Run.ID)
	defer cancel()
	d.postRun(rctx, rs, pl)
}

// announceEnd tells the triggers that listen (OnRunEnd) how the run ended.
func (d *Dispatcher) announceEnd(rs *runState, w store.Work) {
	rs.mu.Lock()
	e := RunEnd{WorkID: w.ID, RunID: rs.Run.ID, Status: rs.Status(), Verdict: runview.Verdict(rs.Report), Message: rs.Run.Message != nil || rs.posting}
	if rs.Problem != "" && e.Verdict == "" {
		e.Verdict = rs.Problem
	}
	rs.mu.Unlock()
	d.runEnded(e)
}

// recordLater keeps trying, in the background, what the store did not take
// when a run ended: its end (when end is set), then its work done. The run
// it records already ended and was shown; leaving it running would make
// the next start interrupt it and run it a second time. The slot of the
// run is not held meanwhile.
func (d *Dispatcher) recordLater(log *slog.Logger, end *record.End, workID string) {
	attempt := 0
	d.retryLater(log, "recording the end of a run", "the next start interrupts it", func(ctx context.Context) (bool, error) {
		attempt++
		err := d.recordEnd(ctx, end)
		if err == nil {
			// Recorded: a later try only marks the work done.
			end = nil
			err = d.completeWork(ctx, workID)
		}
		if err == nil {
			log.Info("the end of the run is recorded after all", "attempts", attempt)
		}
		return err == nil, err
	})
}

// returnLater returns work whose run was never recorded to the queue,
// trying in the background until the store takes it: until then the work
// stays started by this live process, which no sweep takes from it.
func (d *Dispatcher) returnLater(log *slog.Logger, workID string) {
	attempt := 0
	d.retryLater(log, "returning work to the queue", "the next start's recovery requeues it", func(ctx context.Context) (bool, error) {
		attempt++
		rctx, cancel := recording(ctx, "returning work "+workID+" to the queue")
		_, err := d.store.ReturnWork(rctx, workID)
		cancel()
		var conflict *store.StateConflictError
		switch {
		case err == nil:
			log.Info("work returned to the queue", "attempts", attempt)
			if kerr := d.kick(); kerr != nil {
				log.Warn("work returned to the queue; the next sweep starts a worker", "err", kerr)
			}
			return true, nil
		case errors.As(err, &conflict):
			// A sweep elsewhere took the work meanwhile (this process's
			// lease had lapsed): it is not this worker's.
			log.Warn("work not returned to the queue", "err", err)
			return true, nil
		}
		return false, err
	})
}

// retryLater calls try in the background until it reports done, waiting
// 1 s, 2 s, 4 s … (at most 30 s) between tries, for at most
// recordLaterFor or until shutdown; what names the job in the log, and
// otherwise says what becomes of it when it is given up.
func (d *Dispatcher) retryLater(log *slog.Logger, what, otherwise string, try func(ctx context.Context) (bool, error)) {
	err := d.tasks.Go(what, recordLaterFor, func(ctx context.Context) {
		for attempt := 0; ; attempt++ {
			done, err := try(ctx)
			if done {
				return
			}
			wait := min(time.Second<<min(attempt, 5), 30*time.Second)
			log.Warn(what+": not done yet; the store still fails", "err", err, "retry_in", wait)
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				log.Error(what+": given up; "+otherwise, "err", context.Cause(ctx))
				return
			}
		}
	})
	if err != nil {
		log.Error(what+": shutting down; "+otherwise, "err", err)
	}
}

// recordLaterFor is how long recordLater keeps trying.
const recordLaterFor = 24 * time.Hour

// recordEnd records a run's end; one recorded already (a write that
// failed as far as this process could tell had gone through) is fine.
func (d *Dispatcher) recordEnd(ctx context.Context, end *record.End) error {
	if end == nil {
		return nil
	}
	_, err := record.WriteEnd(ctx, d.store, *end)
	var conflict *store.StateConflictError
	if errors.As(err, &conflict) {
		return nil
	}
	return err
}

// completeWork marks work done; work done already is fine.
func (d *Dispatcher) completeWork(ctx context.Context, workID string) error {
	rctx, cancel := recording(ctx, "marking work "+workID+" done")
	defer cancel()
	_, err := d.store.CompleteWork(rctx, workID)
	var conflict *store.StateConflictError
	if errors.As(err, &conflict) {
		return nil
	}
	return err
}

// showFinal brings a run's message up to date after the run ended, under a
// deadline that starts now.
func (d *Dispatcher) showFinal(ctx context.Context, rs *runState) {
	rctx, cancel := recording(ctx, "updating the message of run "+rs.Run.ID)
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
	return fmt.Sprintf("Attempt %d of %d: the previous attempt%s was cut short when the runbot process running it stopped, so it runs again.",
		w.Attempts, store.MaxWorkAttempts, prev)
}

// postRun posts the run's first message and records where it is. A run
// whose message cannot be posted still runs. When the platform refuses
// it, the requester is told why; when the outbox cannot record it (the
// store fails), it is posted later, once the store is back, with the
// run's state then, so a verdict is never left unsaid.
func (d *Dispatcher) postRun(ctx context.Context, rs *runState, pl workPayload) {
	rs.mu.Lock()
	run, msg := rs.Run, rs.Message()
	rs.mu.Unlock()
	log := d.log.With("run", run.ID)
	if d.chat == nil {
		log.Info("no chat configured: the run is recorded and logged", "runbook", run.Runbook, "trigger", run.Trigger)
		return
	}
	if pl.Channel == "" {
		log.Warn("run has no channel to post to (configure the bot's channel)")
		return
	}
	refused := chat.Message{Title: "Could not post the run in this channel", Status: chat.StatusError, Sections: []chat.Section{{
		Text: fmt.Sprintf("Invite the bot to this channel or run it from a channel it is in. The run goes on: see status %s.", run.ID),
	}}}
	if q, ok := d.chat.(chat.Queue); ok {
		// The post is only recorded now; a refusal comes later, and the
		// chat tells the requester then.
		var tell *chat.Refusal
		if pl.ReplyTo != "" {
			tell = &chat.Refusal{To: chat.Recipient{ReplyTo: pl.ReplyTo}, Message: refused}
		}
		ref, err := q.Enqueue(ctx, runMessageKey(run.ID), pl.Channel, pl.Thread, msg, tell)
		if err != nil {
			log.Warn("run message not queued; trying again until the store takes it", "channel", pl.Channel, "err", err)
			d.postLater(log, rs, q, pl, tell)
			return
		}
		d.attach(ctx, log, rs, ref)
		return
	}
	ref, err := d.chat.Post(ctx, pl.Channel, pl.Thread, msg)
	if err != nil {
		log.Warn("run message not posted", "channel", pl.Channel, "err", err)
		if pl.ReplyTo != "" {
			refused.Notes = append(refused.Notes, fmt.Sprintf("The chat said: %v", err))
			// Only the reply target: the channel just refused the bot.
			if r, ok := d.chat.(chat.Replier); !ok {
				log.Warn("requester not told: the chat cannot reply privately")
			} else if rerr := r.Reply(ctx, chat.Recipient{ReplyTo: pl.ReplyTo}, refused); rerr != nil {
				log.Warn("requester not told", "err", rerr)
			}
		}
		return
	}
	d.attach(ctx, log, rs, ref)
}

// runMessageKey is the outbox key of a run's message: one message per run,
// however many tries it takes to queue it.
func runMessageKey(runID string) string { return "run " + runID }

// attach makes ref the run's message: recorded on the run (so a click or
// a later process finds it) and updated live from now on.
func (d *Dispatcher) attach(ctx context.Context, log *slog.Logger, rs *runState, ref chat.Ref) {
	rs.mu.Lock()
	id := rs.Run.ID
	rs.Run.Message = &store.MessageRef{Platform: ref.Platform, Channel: ref.Channel, ID: ref.ID}
	rs.live = d.liveMessage(ref)
	rs.mu.Unlock()
	if err := d.store.SetRunMessage(ctx, id, store.MessageRef(ref)); err != nil {
		d.recordMessageLater(log, id, ref, err)
	}
}

// recordMessageLater records where a run's message is, trying in the
// background until the store takes it (the first try failed with err):
// not recorded, a click on the message, a vote on another replica and the
// run's history could not find it.
func (d *Dispatcher) recordMessageLater(log *slog.Logger, runID string, ref chat.Ref, err error) {
	log.Warn("run message not recorded on the run; trying again until the store takes it", "err", err)
	d.retryLater(log, "recording the message of run "+runID, "the run does not name its message", func(ctx context.Context) (bool, error) {
		rctx, cancel := recording(ctx, "recording the message of run "+runID)
		defer cancel()
		err := d.store.SetRunMessage(rctx, runID, store.MessageRef(ref))
		if err == nil {
			log.Info("the run's message is recorded after all")
		}
		return err == nil, err
	})
}

// postLater queues the first message of a run that the outbox could not
// record, trying in the background until the store takes it, with the
// run's state at each try; the run goes on meanwhile, and may end first.
// Once queued, the message is recorded on the run and shows the newest
// state.
func (d *Dispatcher) postLater(log *slog.Logger, rs *runState, q chat.Queue, pl workPayload, tell *chat.Refusal) {
	rs.mu.Lock()
	id := rs.Run.ID
	rs.posting = true
	rs.mu.Unlock()
	attempt := 0
	ref := chat.Ref{}
	d.retryLater(log, "posting the message of run "+id, "the run's message is not posted", func(ctx context.Context) (bool, error) {
		attempt++
		if ref.ID == "" {
			rs.mu.Lock()
			msg := rs.Message()
			rs.mu.Unlock()
			rctx, cancel := recording(ctx, "queueing the message of run "+id)
			r, err := q.Enqueue(rctx, runMessageKey(id), pl.Channel, pl.Thread, msg, tell)
			cancel()
			if err != nil {
				return false, err
			}
			ref = r
			rs.mu.Lock()
			rs.Run.Message = &store.MessageRef{Platform: ref.Platform, Channel: ref.Channel, ID: ref.ID}
			rs.live = d.liveMessage(ref)
			rs.mu.Unlock()
			// The message was queued with the state of that instant; the
			// run may have moved on while it was.
			rs.publish()
		}
		rctx, cancel := recording(ctx, "recording the message of run "+id)
		err := d.store.SetRunMessage(rctx, id, store.MessageRef(ref))
		cancel()
		if err != nil {
			return false, err
		}
		log.Info("run message queued after all", "attempts", attempt)
		return true, nil
	})
}

// show publishes the run's state and waits until the chat has it.
func (d *Dispatcher) show(ctx context.Context, rs *runState) {
	rs.publish()
	rs.mu.Lock()
	live := rs.live
	rs.mu.Unlock()
	if live == nil {
		return
	}
	if err := live.Flush(ctx); err != nil && !errors.Is(err, context.Canceled) {
		d.log.Warn("run message not brought up to date", "run", rs.Run.ID, "err", err)
	}
}
