package schedule

import (
	"context"
	"errors"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/runbot/runbot/store"
)

// Cluster-wide firing: every replica's scheduler fires at every tick, and
// the one that claims the tick in the store (store.ScheduleTicks) runs the
// audit. A tick whose claimer died before it finished, or that nobody
// claimed (every replica was down), is caught up by the next catch-up
// check of a live replica: the most recent such tick only, and only within
// CatchUpWindow; an older one is recorded as missed, never dropped
// silently.
const (
	// CatchUpWindow bounds how late a missed tick is still run: an audit
	// an hour late describes a past nobody asked about any more.
	CatchUpWindow = time.Hour
	// catchUpGrace is how old a tick must be before a catch-up check
	// looks at it: every live replica claims it at its time, within
	// milliseconds, and a claimer that died must have its lease
	// (store.DefaultLeaseTTL) expire before its tick is taken over.
	catchUpGrace = time.Minute
	// catchUpEvery is how often each replica checks for ticks to catch up.
	catchUpEvery = 15 * time.Second
	// tickFinishTimeout bounds recording a tick's end.
	tickFinishTimeout = 10 * time.Second
	// summaryTicks names the audit summary in the tick claims; no
	// schedule's name can start with "runbot." since it starts with a
	// runbook's name, which has no dot.
	summaryTicks = "runbot.summary"
)

// tickAt is the tick of sched at or before t: the one a job firing at t
// runs. A cron schedule's ticks are absolute times, the same on every
// replica; "@every d" counts from each process's start, so its ticks are
// taken as windows of d from the Unix epoch instead, and the replica that
// fires first in a window runs it.
func tickAt(sched cron.Schedule, t time.Time) time.Time {
	if c, ok := sched.(cron.ConstantDelaySchedule); ok {
		return t.Truncate(c.Delay)
	}
	// Schedules only answer "the next tick after": start a little before t
	// and step forward, looking further back for sparse schedules.
	for back := time.Minute; back <= 400*24*time.Hour; back *= 8 {
		x := sched.Next(t.Add(-back))
		if x.IsZero() || x.After(t) {
			continue
		}
		for {
			n := sched.Next(x)
			if n.IsZero() || n.After(t) {
				return x
			}
			x = n
		}
	}
	return time.Time{}
}

// catchUpCandidate is the tick of sched a catch-up check may run at now:
// one that every replica should have claimed by now (at least
// catchUpGrace old; for "@every" windows, one that has ended), and the
// most recent one, so that after an outage only the last missed tick runs
// (the next tick has not come due yet). It is zero when there is none: a
// schedule whose ticks come more often than catchUpGrace has its next
// tick soon anyway.
func catchUpCandidate(sched cron.Schedule, now time.Time) time.Time {
	if c, ok := sched.(cron.ConstantDelaySchedule); ok {
		at := tickAt(sched, now.Add(-catchUpGrace-c.Delay))
		if !at.Add(2 * c.Delay).After(now) {
			return time.Time{}
		}
		return at
	}
	at := tickAt(sched, now.Add(-catchUpGrace))
	if at.IsZero() || !sched.Next(at).After(now) {
		return time.Time{}
	}
	return at
}

// claim claims a tick for this replica. It reports false, having logged
// why, when the tick is not this replica's to run.
func (s *Scheduler) claim(ctx context.Context, e *scheduled, at time.Time, catchUp bool) bool {
	cctx, cancel := context.WithTimeoutCause(ctx, tickFinishTimeout, errors.New("claiming a schedule tick took too long"))
	defer cancel()
	tk, err := s.ticks.ClaimTick(cctx, store.TickClaim{Schedule: e.Name, At: at, CatchUp: catchUp})
	var claimed *store.TickClaimedError
	switch {
	case err == nil:
		if tk.CatchUp {
			s.log.Warn("scheduled audit catches up a missed tick", "schedule", e.Name, "tick", at, "taken_over_from", tk.TakenOverFrom)
		}
		return true
	case errors.As(err, &claimed):
		if !catchUp {
			s.log.Debug("scheduled audit tick run by another replica", "schedule", e.Name, "tick", at, "owner", claimed.Owner)
		}
	case errors.Is(err, store.ErrNothingToCatchUp):
		// A schedule new to the cluster missed nothing.
	default:
		s.log.Error("scheduled audit tick not claimed; not run", "schedule", e.Name, "tick", at, "err", err)
	}
	return false
}

// recordTick records a tick this replica does not run (skipped, missed),
// so that no catch-up runs it later. It reports whether this replica
// recorded it.
func (s *Scheduler) recordTick(ctx context.Context, name string, at time.Time, state store.TickState, catchUp bool) bool {
	if s.ticks == nil {
		return false
	}
	cctx, cancel := context.WithTimeoutCause(ctx, tickFinishTimeout, errors.New("recording a schedule tick took too long"))
	defer cancel()
	_, err := s.ticks.ClaimTick(cctx, store.TickClaim{Schedule: name, At: at, State: state, CatchUp: catchUp})
	var claimed *store.TickClaimedError
	if err != nil && !errors.As(err, &claimed) && !errors.Is(err, store.ErrNothingToCatchUp) {
		s.log.Warn("schedule tick not recorded", "schedule", name, "tick", at, "state", state, "err", err)
	}
	return err == nil
}

// finishTick records that a claimed tick's audit (or summary) ended. It
// runs after the audit, whose context may be over, so it has a deadline of
// its own.
func (s *Scheduler) finishTick(ctx context.Context, name string, at time.Time, runID string) {
	cctx, cancel := context.WithTimeoutCause(context.WithoutCancel(ctx), tickFinishTimeout, errors.New("recording a schedule tick's end took too long"))
	defer cancel()
	if _, err := s.ticks.FinishTick(cctx, name, at, runID); err != nil {
		s.log.Warn("schedule tick's end not recorded", "schedule", name, "tick", at, "run", runID, "err", err)
	}
}

// catchUp runs, for each schedule, the most recent tick nobody ran: its
// claimer died (its lease expired) or nobody claimed it. A tick older than
// CatchUpWindow is recorded as missed instead.
func (s *Scheduler) catchUp(ctx context.Context) {
	if s.ticks == nil || ctx.Err() != nil {
		return
	}
	now := s.now()
	for _, e := range s.entries {
		at := catchUpCandidate(e.sched, now)
		if at.IsZero() {
			continue
		}
		if now.Sub(at) > CatchUpWindow {
			if s.recordTick(ctx, e.Name, at, store.TickMissed, true) {
				s.log.Warn("scheduled audit tick missed: nobody ran it and it is too late to catch up", "schedule", e.Name, "tick", at, "window", CatchUpWindow)
			}
			continue
		}
		s.fireTick(ctx, e, at, true)
	}
}
