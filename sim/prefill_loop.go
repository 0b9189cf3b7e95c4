package sim

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// run is the prefill event loop: it batches every bootstrapped request, "computes"
// the batch for prompt/--sim-prefill-rate seconds, sends each room's KV to decode and
// polls the inflight queue.
func (p *prefillSched) run(ctx context.Context) {
	go newWatchdog(p.e, p.watchdogProbe, p.watchdogFire).run(ctx)
	idle := time.NewTicker(p.e.cfg.Sim.IdleRefresh)
	defer idle.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.wake:
		case <-idle.C:
			p.idleRefresh()
		}
		for p.iterate(ctx) {
		}
	}
}

// iterate runs at most one batch and reports whether it did.
func (p *prefillSched) iterate(ctx context.Context) bool {
	p.mu.Lock()
	p.pollInflightLocked(false)
	p.expireBootstrapLocked(time.Now())
	if len(p.waiting) == 0 {
		p.mu.Unlock()
		return false
	}
	batch := p.waiting
	p.waiting = nil
	tokens := 0
	for _, r := range batch {
		r.state = psForward
		tokens += r.prompt
	}
	p.logBatchLocked(batch, tokens)
	p.inForward = true
	stalled, unstall, slow := p.stalled, p.unstall, p.slow
	p.mu.Unlock()

	if stalled {
		// A stuck forward pass: the batch line was printed, the result never comes.
		select {
		case <-ctx.Done():
			return false
		case <-unstall:
		}
	}
	forward := time.Duration(float64(tokens)/p.e.cfg.Sim.PrefillRate*float64(time.Second)) + slow
	select {
	case <-ctx.Done():
		return false
	case <-time.After(forward):
	}

	now := time.Now()
	p.mu.Lock()
	p.inForward = false
	for _, r := range batch {
		r.state, r.sentAt = psInflight, now
		r.bytes = min(r.prompt*p.e.cfg.Sim.KVBytesPerToken, maxKVPayload)
		p.inflight = append(p.inflight, r)
		p.e.metrics.observeTTFT(now.Sub(r.arrived).Seconds())
	}
	p.e.metrics.addPrompt(tokens)
	// The KV senders of this batch and of earlier ones are polled after the forward
	// pass; this is where aborts of parked requests are finally applied.
	p.pollInflightLocked(true)
	var send []*prefillReq
	for _, r := range batch {
		if r.state == psInflight && !r.aborted && r.failReason == "" {
			send = append(send, r)
		}
	}
	p.mu.Unlock()
	p.e.noteOutput()

	for _, r := range send {
		if err := r.peer.w.send(kvData, r.room, fmt.Sprint(r.bytes), kvPattern[:r.bytes]); err != nil {
			p.mu.Lock()
			r.failReason = ReasonNixlSender
			p.mu.Unlock()
			p.kick()
		}
	}
	return true
}

// logBatchLocked prints the "Prefill batch" line and writes the gauges, which
// SGLang does once per prefill batch. Caller holds p.mu.
func (p *prefillSched) logBatchLocked(batch []*prefillReq, tokens int) {
	now := time.Now()
	p.iter++
	gap := now.Sub(p.lastBatchAt).Seconds()
	p.lastBatchAt = now
	inflightTokens, bootstrap := 0, 0
	for _, r := range p.inflight {
		inflightTokens += r.prompt
	}
	for _, r := range p.reqs {
		if r.state == psBootstrap {
			bootstrap++
		}
	}
	capacity := float64(p.e.cfg.Sim.MaxTotalTokens)
	s := PrefillStats{
		Iter: p.iter, NewSeq: len(batch), NewToken: tokens, TokenUsage: float64(inflightTokens+tokens) / capacity,
		Queue: len(p.waiting), Bootstrap: bootstrap, Inflight: len(p.inflight),
	}
	if gap > 0 {
		s.InputThroughput = float64(tokens) / gap
	}
	t := p.e.cfg.Topology
	p.e.log.Logf(t.Prefix(0, 0), "%s", FormatPrefillBatch(p.e.log.Era(), p.e.showIters, s))
	p.e.metrics.publish(0, schedGauges{
		Queue: float64(s.Queue), TokenUsage: s.TokenUsage, UsedTokens: float64(inflightTokens + tokens),
		PrefillPrealloc: float64(bootstrap), PrefillInflight: float64(s.Inflight),
	})
}

// pollInflightLocked completes acknowledged transfers and fails broken ones. Aborts
// are applied only when applyAborts is set, i.e. right after a forward pass. Caller
// holds p.mu.
func (p *prefillSched) pollInflightLocked(applyAborts bool) {
	keep := p.inflight[:0]
	for _, r := range p.inflight {
		switch {
		case r.transferred:
			p.removeLocked(r)
			r.done <- nil
		case r.failReason != "":
			reason := r.failReason
			if r.aborted {
				// The abort was recorded first; the broken session only made it visible.
				reason = ReasonAborted
			}
			p.logFailureLocked(r, false, reason)
			p.removeLocked(r)
			r.done <- errors.New("KVTransferError(bootstrap_room=" + fmt.Sprint(r.room) + "): " + r.failReason)
		case r.aborted && applyAborts:
			p.logFailureLocked(r, false, ReasonAborted)
			p.removeLocked(r)
		default:
			keep = append(keep, r)
		}
	}
	for i := len(keep); i < len(p.inflight); i++ {
		p.inflight[i] = nil
	}
	p.inflight = keep
}

// expireBootstrapLocked fails requests decode never hand-shook with, after
// SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT. Caller holds p.mu.
func (p *prefillSched) expireBootstrapLocked(now time.Time) {
	for _, r := range p.reqs {
		if r.state == psBootstrap && now.Sub(r.arrived) > p.bootstrapTimeout {
			reason := fmt.Sprintf("Request %d timed out after %.1fs in KVPoll.Bootstrapping", r.room, now.Sub(r.arrived).Seconds())
			p.logFailureLocked(r, true, reason)
			p.removeLocked(r)
			r.done <- errors.New(reason)
		}
	}
	for room, pp := range p.pending {
		if now.Sub(pp.at) > p.bootstrapTimeout {
			delete(p.pending, room)
		}
	}
}

// idleRefresh rewrites the gauges of an idle prefill from its queues. Unlike decode,
// the simulated prefill refreshes even with requests parked in flight (as builds
// before the early return did), so a parked request shows up as
// num_prefill_inflight_queue_reqs 1 without waiting for another batch.
func (p *prefillSched) idleRefresh() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.expireBootstrapLocked(time.Now())
	if p.stalled {
		return
	}
	inflightTokens, bootstrap := 0, 0
	for _, r := range p.inflight {
		inflightTokens += r.prompt
	}
	for _, r := range p.reqs {
		if r.state == psBootstrap {
			bootstrap++
		}
	}
	p.e.metrics.publishIdle(0, schedGauges{
		Queue: float64(len(p.waiting)), TokenUsage: float64(inflightTokens) / float64(p.e.cfg.Sim.MaxTotalTokens),
		UsedTokens: float64(inflightTokens), PrefillPrealloc: float64(bootstrap), PrefillInflight: float64(len(p.inflight)),
	})
}
