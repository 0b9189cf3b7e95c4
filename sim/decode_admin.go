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
	case FaultClear:
		// Clearing removes injected faults; a wedge is a consequence, not an injected
		// fault, so it stays until the process restarts.
		d.e.metrics.setStale(0, 0)
	default:
		return fmt.Errorf("fault %q does not apply to a decode engine", f.Name)
	}
	return nil
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
	return st
}
