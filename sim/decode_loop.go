package sim

import (
	"context"
	"fmt"
	"time"
)

// run is the decode event loop. While requests are running it performs one decode
// iteration per token interval; otherwise it sleeps until the transfer engine or a
// client wakes it, refreshing gauges when idle. A watchdog thread watches it.
func (d *decodeSched) run(ctx context.Context) {
	go newWatchdog(d.e, d.watchdogProbe, d.watchdogFire).run(ctx)
	idle := time.NewTicker(d.e.cfg.Sim.IdleRefresh)
	defer idle.Stop()
	timer := time.NewTimer(d.step())
	defer timer.Stop()
	for {
		if d.iterate(time.Now()) {
			timer.Reset(d.step())
			select {
			case <-ctx.Done():
				return
			case <-idle.C:
				d.idleRefresh()
				<-timer.C
			case <-timer.C:
			}
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-d.wake:
		case <-idle.C:
			d.idleRefresh()
		}
	}
}

// step is the time one decode iteration takes: one token interval, or the
// slow-decode fault's inter-token latency.
func (d *decodeSched) step() time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.itl > 0 {
		return d.itl
	}
	return time.Duration(float64(time.Second) / d.e.cfg.Sim.TokenRate)
}

// iterate polls the transfer queue and runs one decode iteration. It reports whether
// there is running work, i.e. whether the next iteration should follow at once.
func (d *decodeSched) iterate(now time.Time) bool {
	d.mu.Lock()
	if d.hang != nil {
		// The loop is blocked: this iteration never comes. cur_batch keeps the
		// value it had when the loop blocked.
		d.mu.Unlock()
		return false
	}
	if d.wedge.wedged {
		// The wedged overlap loop still spins, but issues no batches and polls no
		// transfers; arrived KV is never acknowledged.
		d.curBatch = false
		d.mu.Unlock()
		return false
	}
	var acks []*decodeReq
	for _, req := range d.reqs {
		switch {
		case req.state == dsTransfer && req.kvReady:
			req.state = dsRunning
			d.running = append(d.running, req)
			d.e.metrics.addPrompt(req.prompt)
			acks = append(acks, req)
		case req.state == dsTransfer && now.Sub(req.arrived) > d.waitingTimeout:
			d.expireLocked(req, now)
		}
	}
	busy := len(d.running) > 0
	if busy {
		d.decodeStepLocked(now)
	}
	// The loop's next iteration has a batch if requests are still running.
	d.curBatch = len(d.running) > 0
	d.mu.Unlock()
	for _, req := range acks {
		_ = d.kv.send(req.session, kvDone, req.room)
	}
	if busy {
		d.e.noteOutput()
	}
	return busy
}

// expireLocked applies SGLANG_DISAGGREGATION_WAITING_TIMEOUT to a request whose KV
// never arrived, with SGLang's once-per-process hint.
func (d *decodeSched) expireLocked(req *decodeReq, now time.Time) {
	if d.e.cfg.TransferBackend == "nixl" {
		// NIXL's receiver checks its own timeout, with its own line and no hint
		// (nixl/conn.py NixlKVReceiver.poll).
		d.e.log.Logf(d.e.cfg.Topology.Prefix(req.rank, d.e.cfg.Topology.GlobalTP(req.rank)), "Request %d waiting_timeout", req.room)
	} else if !d.warnedTimeout {
		d.warnedTimeout = true
		d.e.log.Logf(d.e.cfg.Topology.Prefix(req.rank, d.e.cfg.Topology.GlobalTP(req.rank)),
			"Some requests fail to receive KV Cache transfer done signal after bootstrapping. If a greater mean TTFT is acceptable, you can 'export SGLANG_DISAGGREGATION_WAITING_TIMEOUT=600' (10 minutes) to relax the timeout condition. ")
	}
	d.failLocked(req, fmt.Sprintf("Request %d timed out after %.1fs in KVPoll.WaitingForInput", req.room, now.Sub(req.arrived).Seconds()))
}

// decodeStepLocked gives every running request one token. Caller holds d.mu.
func (d *decodeSched) decodeStepLocked(now time.Time) {
	d.forwardCt++
	for _, req := range d.running {
		req.generated++
		d.rankTokens[req.rank]++
		req.out <- decodeEvent{token: tokenText(req.generated), final: req.generated >= req.maxTokens}
	}
	d.e.metrics.addDecodeIteration(d.running)
	// The line describes the batch that just ran, finished requests included.
	if d.forwardCt%d.e.cfg.DecodeLogInterval == 0 {
		d.logBatchLocked(now)
	}
	keep := d.running[:0]
	for _, req := range d.running {
		if req.generated >= req.maxTokens {
			delete(d.reqs, req.room)
			req.state = dsDone
			continue
		}
		keep = append(keep, req)
	}
	for i := len(keep); i < len(d.running); i++ {
		d.running[i] = nil
	}
	d.running = keep
}

// rankCounts tallies the queues of one DP rank. Caller holds d.mu.
func (d *decodeSched) rankCounts(rank int) (running, tokens, prealloc, transfer, preTokens int) {
	for _, req := range d.running {
		if req.rank == rank {
			running++
			tokens += req.prompt + req.generated
		}
	}
	for _, req := range d.reqs {
		if req.rank != rank {
			continue
		}
		switch req.state {
		case dsPrealloc:
			prealloc++
		case dsTransfer:
			transfer++
			preTokens += req.prompt
		}
	}
	return
}

// logBatchLocked prints one "Decode batch" line per DP rank that has a batch and
// writes every rank's gauges: the only time, besides an idle refresh, that the
// scheduler gauges change. Caller holds d.mu.
func (d *decodeSched) logBatchLocked(now time.Time) {
	t := d.e.cfg.Topology
	capacity := float64(d.e.cfg.Sim.MaxTotalTokens)
	for rank := 0; rank < d.ranks(); rank++ {
		running, tokens, prealloc, transfer, preTokens := d.rankCounts(rank)
		elapsed := now.Sub(d.rankLogAt[rank]).Seconds()
		throughput := 0.0
		if elapsed > 0 {
			throughput = float64(d.rankTokens[rank]) / elapsed
		}
		d.rankTokens[rank], d.rankLogAt[rank] = 0, now
		s := DecodeStats{
			Iter: d.forwardCt, Running: running, Tokens: tokens, TokenUsage: float64(tokens) / capacity,
			PreallocUsage: float64(preTokens) / capacity, Prealloc: prealloc, Transfer: transfer, GenThroughput: throughput,
		}
		if running > 0 {
			d.e.log.Logf(t.Prefix(rank, t.GlobalTP(rank)), "%s", FormatDecodeBatch(d.e.log.Era(), d.e.showIters, s))
		}
		d.e.metrics.publish(rank, schedGauges{
			Running: float64(running), GenThroughput: throughput, TokenUsage: s.TokenUsage, UsedTokens: float64(tokens),
			DecodePrealloc: float64(prealloc), DecodeTransfer: float64(transfer),
		})
	}
}

// idleRefresh is SGLang's self_check_during_idle: it rewrites the gauges of an idle
// scheduler, but returns early while any request waits in a decode queue, and a
// wedged scheduler never gets this far. That is why a stuck decode's gauges freeze.
func (d *decodeSched) idleRefresh() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.hang != nil || d.wedge.wedged || len(d.running) > 0 || len(d.reqs) > 0 {
		return
	}
	for rank := 0; rank < d.ranks(); rank++ {
		d.e.metrics.publishIdle(rank, schedGauges{})
	}
}

// watchdogProbe reads what SGLang's watchdog reads: forward_ct and cur_batch.
func (d *decodeSched) watchdogProbe() (int, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.forwardCt, d.curBatch
}

func (d *decodeSched) watchdogFire() {
	d.mu.Lock()
	d.watchdogFired = true
	d.mu.Unlock()
}
