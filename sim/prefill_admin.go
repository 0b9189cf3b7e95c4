package sim

import "fmt"

func (p *prefillSched) applyFault(f Fault) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch f.Name {
	case FaultSlow:
		p.slow = f.ttft()
	case FaultPrefillStall:
		if !p.stalled {
			p.stalled = true
			p.unstall = make(chan struct{})
		}
	case FaultClear:
		p.slow = 0
		if p.stalled {
			p.stalled = false
			close(p.unstall)
		}
	default:
		return fmt.Errorf("fault %q does not apply to a prefill engine", f.Name)
	}
	p.kick()
	return nil
}

func (p *prefillSched) state() map[string]any {
	p.mu.Lock()
	defer p.mu.Unlock()
	bootstrap, parked := 0, 0
	for _, r := range p.reqs {
		if r.state == psBootstrap {
			bootstrap++
		}
	}
	for _, r := range p.inflight {
		if r.aborted {
			parked++
		}
	}
	return map[string]any{
		"role": "prefill", "bootstrap": bootstrap, "waiting": len(p.waiting), "inflight": len(p.inflight),
		// inflight_aborted counts parked requests whose abort is recorded but not yet
		// applied (that happens after the next forward pass).
		"inflight_aborted": parked,
		"stalled":          p.stalled, "slow_ttft": p.slow.String(), "batches": p.iter,
		"cur_batch": p.inForward, "watchdog_timeout": p.e.cfg.Watchdog.Repr(), "watchdog_fired": p.watchdogFired,
	}
}
