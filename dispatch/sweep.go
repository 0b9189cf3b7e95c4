package dispatch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/store"
)

// Sweep recovers what dead processes left in the store (store.MarkInterrupted:
// a replica whose lease expired, a process on this host that is gone),
// logs it, brings its chat messages up to date (ShowRecovered) and starts a
// worker for the work it requeued. Serve sweeps at start and then every
// store.DefaultRecoveryInterval (SweepEvery), so that when one replica dies
// another takes over what it left once its lease expires.
//
// The worker also picks up pending work that nobody claims: work a replica
// accepted and then died before its own worker claimed it. And the
// approved plans nobody applies are applied here (applyStranded): one
// approved from the CLI, which records votes and applies nothing, and one
// approved by a click whose replica died before it started applying it
// (the approval stands, the apply was only lost).
func (d *Dispatcher) Sweep(ctx context.Context) (store.Recovery, error) {
	rec, err := d.store.MarkInterrupted(ctx)
	if err != nil {
		return store.Recovery{}, fmt.Errorf("sweep: %w", err)
	}
	d.logRecovery(rec)
	if !rec.Empty() {
		d.ShowRecovered(ctx, rec)
	}
	d.applyStranded(ctx)
	d.showAwayVotes(ctx)
	if d.waiting.Load() == 0 {
		// A worker that waits for a run slot claims whatever is pending
		// once it has one; a second one would only wait beside it.
		if err := d.kick(); err != nil {
			return rec, fmt.Errorf("sweep: start a worker: %w", err)
		}
	}
	return rec, nil
}

// SweepEvery sweeps every interval until ctx ends. Each sweep runs under
// a deadline of one interval; a failed sweep is logged and the next one
// tries again. beat, when set, is called after each sweep that succeeded.
func (d *Dispatcher) SweepEvery(ctx context.Context, interval time.Duration, beat func()) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		sctx, cancel := context.WithTimeoutCause(ctx, interval, errors.New("recovery sweep took longer than its interval"))
		_, err := d.Sweep(sctx)
		cancel()
		switch {
		case err == nil:
			if beat != nil {
				beat()
			}
		case ctx.Err() == nil:
			d.log.Warn("recovery sweep failed; the next one tries again", "err", err)
		}
	}
}

// logRecovery says what a sweep recovered, one line per record.
func (d *Dispatcher) logRecovery(rec store.Recovery) {
	for _, id := range rec.Runs {
		d.log.Warn("run was interrupted: the process running it died before its report was stored", "run", id)
	}
	for _, id := range rec.Finished {
		d.log.Info("run had ended before the process died: its result stands and it is not run again", "run", id)
	}
	for _, id := range rec.Plans {
		d.log.Warn("remediation was interrupted: the process applying it died; it will not be resumed without a new approval", "plan", id)
	}
	for _, id := range rec.Requeued {
		d.log.Warn("queued work runs again: its run was cut short", "work", id, "max_attempts", store.MaxWorkAttempts)
	}
	for _, key := range rec.Locks {
		d.log.Warn("lock released: the process holding it died", "lock", key)
	}
	for _, id := range rec.Abandoned {
		d.log.Error("queued work is not run again: it was cut short on every attempt", "work", id, "attempts", store.MaxWorkAttempts)
	}
}

// strandedAfter is how long a plan may stay approved before a sweep takes
// it for stranded: the replica that records the deciding approval moves
// the plan to applying within a second, as the first step of applying it.
const strandedAfter = time.Minute

// applyStranded applies the approved plans that nobody is applying:
//
//   - a plan approved away from chat (runbot approve: the CLI records the
//     vote and applies nothing, remediation.ApprovedFrom), at once;
//   - a plan approved at least strandedAfter ago that never started
//     applying: the replica that received the deciding click died in
//     between. It is the apply that click asked for, not a new one.
//
// Either way the store's compare-and-set on approved -> applying lets one
// replica apply each plan (the others find it applying and stop), a plan
// this process is already applying is not started again beside itself,
// and an approval that expired meanwhile stops it (Remediator.Apply
// refuses).
func (d *Dispatcher) applyStranded(ctx context.Context) {
	plans, err := d.store.ListPlans(ctx, store.PlanFilter{States: []store.PlanState{store.PlanApproved}})
	if err != nil {
		d.log.Warn("approved plans not checked", "err", err)
		return
	}
	// On the database's clock, which wrote the expiry and UpdatedAt.
	now := d.store.Now()
	for _, p := range plans {
		if !p.Policy.ExpiresAt.IsZero() && !now.Before(p.Policy.ExpiresAt) {
			continue
		}
		src, away, err := remediation.ApprovedFrom(ctx, d.store, p.ID)
		if err != nil {
			// Not known to be a CLI vote: it waits as a click's would.
			d.log.Warn("where the approval came from is not known", "plan", p.ID, "err", err)
		}
		if !away && now.Sub(p.UpdatedAt) < strandedAfter {
			continue
		}
		if _, busy := d.sweepApplying.LoadOrStore(p.ID, true); busy {
			continue
		}
		actor := "runbot"
		if approvals, err := d.store.Approvals(ctx, p.ID); err == nil && len(approvals) > 0 {
			actor = approvals[len(approvals)-1].User
		}
		if away {
			d.log.Info("applying a plan approved from the "+src.Channel, "plan", p.ID, "approved_by", actor, "login", src.Login)
		} else {
			d.log.Warn("applying a plan approved on a process that died before it applied it", "plan", p.ID, "approved_by", actor)
		}
		err = d.tasks.Go("apply approved plan "+p.ID, d.applyTimeout, func(ctx context.Context) {
			defer d.sweepApplying.Delete(p.ID)
			// Another replica's sweep may have claimed it since the list
			// was read; then there is nothing to show here.
			if cur, err := d.store.GetPlan(ctx, p.ID); err != nil || cur.State != store.PlanApproved {
				return
			}
			rs, release, err := d.hold(p.RunID, func() (*runState, error) { return d.loadPlanState(ctx, p.ID) })
			if err != nil {
				d.log.Warn("approved plan not applied", "plan", p.ID, "err", err)
				return
			}
			defer release()
			d.apply(ctx, rs, p.ID, actor)
		})
		if err != nil {
			d.sweepApplying.Delete(p.ID)
			d.log.Warn("approved plan not applied", "plan", p.ID, "err", err)
		}
	}
}
