package dispatch

import (
	"context"
	"errors"
	"fmt"
	"time"

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
// accepted and then died before its own worker claimed it.
func (d *Dispatcher) Sweep(ctx context.Context) (store.Recovery, error) {
	rec, err := d.store.MarkInterrupted(ctx)
	if err != nil {
		return store.Recovery{}, fmt.Errorf("sweep: %w", err)
	}
	d.logRecovery(rec)
	if !rec.Empty() {
		d.ShowRecovered(ctx, rec)
	}
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
