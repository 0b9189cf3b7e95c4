package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// injectAbortBurst is the pd-wedge fault: n transfers in flight on this decode are
// aborted at once, as when a burst of clients time out together. The requests are
// synthetic (they have no prefill counterpart) but take the real abort path, so the
// causal model, not the fault, decides whether the scheduler wedges.
func (d *decodeSched) injectAbortBurst(n int) {
	burst := make([]*decodeReq, 0, n)
	d.mu.Lock()
	for len(burst) < n {
		room := rand.Uint64() >> 1
		if _, dup := d.reqs[room]; dup {
			continue
		}
		req := &decodeReq{
			rid: newRID(), room: room, rank: int(room % uint64(d.ranks())), prompt: 256, maxTokens: 1,
			arrived: time.Now(), state: dsTransfer, out: make(chan decodeEvent, 2),
		}
		d.reqs[room] = req
		burst = append(burst, req)
	}
	d.mu.Unlock()
	for _, req := range burst {
		d.abort(req)
	}
}

func (d *decodeSched) applyFault(f Fault) error {
	switch f.Name {
	case FaultPDWedge:
		n := f.Count
		if n == 0 {
			n = d.e.cfg.Sim.WedgeBurst
		}
		d.injectAbortBurst(n)
	case FaultStaleSample:
		d.e.metrics.setStale(f.Scrapes, f.Value)
	case FaultDecodeHang:
		d.blockLoop(time.Now())
	case FaultSlowDecode:
		d.mu.Lock()
		d.itl = f.itl()
		d.mu.Unlock()
	case FaultClear:
		// Clearing removes injected faults; a wedge is a consequence, not an injected
		// fault, so it stays until the process restarts, and a blocked event loop
		// cannot be unblocked from outside either.
		d.e.metrics.setStale(0, 0)
		d.mu.Lock()
		d.itl = 0
		d.mu.Unlock()
	default:
		return fmt.Errorf("fault %q does not apply to a decode engine", f.Name)
	}
	return nil
}

// blockLoop is the decode-hang fault: the event loop blocks where it stands. With
// requests running it blocks mid-batch (cur_batch set, forward_ct frozen), so the
// watchdog kills the process after --watchdog-timeout; on an idle decode cur_batch
// is None, and because the blocked loop never reads the health request either, no
// batch ever starts: the watchdog never fires and the process stays up, /health
// answering 503, until it is restarted. The overlap schedule makes no difference to
// the fault; it is recorded for the ground truth.
func (d *decodeSched) blockLoop(now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.hang != nil {
		return
	}
	d.hang = &hangState{since: now, overlap: d.wedge.overlap, batchInFlight: d.curBatch, forwardCt: d.forwardCt}
	d.e.diag.Warn("decode scheduler event loop blocked (decode-hang)",
		"batch_in_flight", d.curBatch, "overlap_schedule", d.wedge.overlap, "forward_ct", d.forwardCt)
}

func (d *decodeSched) state() map[string]any {
	d.mu.Lock()
	defer d.mu.Unlock()
	// The request ids waiting for their KV let a tool follow its own
	// requests while other traffic runs.
	preallocRIDs, transferRIDs := []string{}, []string{}
	for _, r := range d.reqs {
		switch r.state {
		case dsPrealloc:
			preallocRIDs = append(preallocRIDs, r.rid)
		case dsTransfer:
			transferRIDs = append(transferRIDs, r.rid)
		}
	}
	slices.Sort(preallocRIDs)
	slices.Sort(transferRIDs)
	st := map[string]any{
		"role": "decode", "wedged": d.wedge.wedged, "overlap_schedule": d.wedge.overlap,
		"prealloc": len(preallocRIDs), "transfer": len(transferRIDs), "running": len(d.running), "forward_ct": d.forwardCt,
		"prealloc_rids": preallocRIDs, "transfer_rids": transferRIDs,
	}
	if d.wedge.wedged {
		st["wedged_since"] = d.wedge.since.UTC().Format(time.RFC3339Nano)
	}
	st["hung"] = d.hang != nil
	if h := d.hang; h != nil {
		aborts, failures := 0, 0
		for _, r := range d.reqs {
			if r.abortPending {
				aborts++
			}
			if r.failPending != "" {
				failures++
			}
		}
		for _, r := range d.inbox {
			if r.abortPending {
				aborts++
			}
		}
		st["hang"] = map[string]any{
			"since": h.since.UTC().Format(time.RFC3339Nano), "overlap_schedule": h.overlap,
			"batch_in_flight": h.batchInFlight, "forward_ct": h.forwardCt,
			// Requests and aborts sent to the blocked loop, which never read them.
			"inbox": len(d.inbox), "aborts_pending": aborts, "failures_pending": failures,
		}
	}
	st["cur_batch"] = d.curBatch
	st["slow_itl"] = d.itl.String()
	st["health_check_timeout"] = d.e.healthWait.String()
	st["watchdog_timeout"] = d.e.cfg.Watchdog.Repr()
	st["watchdog_fired"] = d.watchdogFired
	return st
}
