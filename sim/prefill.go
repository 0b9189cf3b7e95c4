package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

type prefillState int

const (
	psBootstrap prefillState = iota // waiting for decode to reserve KV (#prealloc-req / #bootstrap-req)
	psWaiting                       // bootstrapped, waiting for a prefill batch (#queue-req)
	psForward                       // in the batch being computed
	psInflight                      // prefilled, KV sent, transfer not yet polled done (#inflight-req)
	psDone
)

// prefillReq is one request inside the prefill engine.
type prefillReq struct {
	rid     string
	room    uint64
	prompt  int
	arrived time.Time
	state   prefillState
	peer    *kvPeer
	sentAt  time.Time
	bytes   int

	transferred bool   // decode acknowledged the KV
	aborted     bool   // an AbortReq arrived; applied when the inflight queue is next polled
	failReason  string // the transfer failed (decode session lost)
	done        chan error
}

// pendingPrealloc remembers a decode handshake that arrived before the router's
// request reached prefill; the router sends to both engines concurrently.
type pendingPrealloc struct {
	peer *kvPeer
	at   time.Time
}

// prefillSched is the prefill engine's scheduler: bootstrap queue, waiting queue,
// batches, and the inflight queue of requests whose KV is on its way to decode.
type prefillSched struct {
	e      *Engine
	sender *kvSender

	mu               sync.Mutex
	reqs             map[uint64]*prefillReq
	pending          map[uint64]pendingPrealloc
	waiting          []*prefillReq
	inflight         []*prefillReq
	iter             int
	lastBatchAt      time.Time
	bootstrapTimeout time.Duration

	stalled bool
	unstall chan struct{}
	slow    time.Duration
	// inForward is SGLang's cur_batch != None: a batch is being computed. The
	// watchdog only watches while it is set.
	inForward     bool
	watchdogFired bool

	wake chan struct{}
}

func newPrefillSched(e *Engine, bootstrapLn net.Listener) *prefillSched {
	p := &prefillSched{
		e: e, reqs: map[uint64]*prefillReq{}, pending: map[uint64]pendingPrealloc{},
		wake: make(chan struct{}, 1), lastBatchAt: time.Now(), unstall: make(chan struct{}),
		bootstrapTimeout: envDuration("SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT", 300*time.Second),
	}
	p.sender = newKVSender(bootstrapLn, p)
	go p.sender.serve()
	return p
}

func (p *prefillSched) kick() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// serveChat holds the router's prefill request open until the KV transfer to decode
// completes, fails, or the router drops the request (an abort).
func (p *prefillSched) serveChat(w http.ResponseWriter, r *http.Request, c *chatRequest, rid string) {
	req := &prefillReq{
		rid: rid, room: *c.BootstrapRoom, prompt: c.promptTokens(), arrived: time.Now(),
		done: make(chan error, 1),
	}
	if !p.admit(req) {
		apiError(w, http.StatusBadRequest, "BadRequestError", fmt.Sprintf("bootstrap_room %d is already in use", req.room))
		return
	}
	select {
	case <-r.Context().Done():
		p.e.afterDisconnect(req.arrived, func() { p.abort(req) })
	case err := <-req.done:
		if err != nil {
			apiError(w, http.StatusInternalServerError, "InternalServerError", err.Error())
			return
		}
		// A PD prefill finishes a request with its first token computed.
		p.e.metrics.finished(time.Since(req.arrived).Seconds(), req.prompt, 1)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(completion(rid, p.e.cfg.ServedModelName, "", req.prompt, 0, "length"))
	}
}

func (p *prefillSched) admit(req *prefillReq) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, dup := p.reqs[req.room]; dup {
		return false
	}
	p.reqs[req.room] = req
	if pp, ok := p.pending[req.room]; ok {
		delete(p.pending, req.room)
		req.peer, req.state = pp.peer, psWaiting
		p.waiting = append(p.waiting, req)
		p.kick()
	}
	return true
}

// logFailureLocked prints a prefill failure line on every TP rank holding the request.
func (p *prefillSched) logFailureLocked(req *prefillReq, bootstrap bool, reason string) {
	t := p.e.cfg.Topology
	for _, h := range t.HolderRanks(0) {
		if bootstrap {
			p.e.log.Logf(t.Prefix(h[0], h[1]), "%s", p.e.bootstrapFailedLine(h[1], req.rid, req.room, reason))
		} else {
			p.e.log.Logf(t.Prefix(h[0], h[1]), "%s", p.e.transferFailedLine(h[1], req.rid, req.room, reason))
		}
	}
	if bootstrap {
		p.e.metrics.addBootstrapFailed(0)
	} else {
		p.e.metrics.addTransferFailed(0)
	}
}

// abort records an AbortReq. Requests not yet prefilled leave at once; a request in
// flight is only marked: its KV sender learns of the abort when the event loop next
// polls the inflight queue after a forward pass. While decode is wedged that leaves
// the last probe parked as "#inflight-req: 1" until the next request arrives.
func (p *prefillSched) abort(req *prefillReq) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch req.state {
	case psBootstrap:
		p.logFailureLocked(req, true, ReasonAborted)
		p.removeLocked(req)
	case psWaiting:
		for i, x := range p.waiting {
			if x == req {
				p.waiting = append(p.waiting[:i], p.waiting[i+1:]...)
				break
			}
		}
		p.removeLocked(req)
	case psForward, psInflight:
		req.aborted = true
	}
}

func (p *prefillSched) removeLocked(req *prefillReq) {
	if p.reqs[req.room] == req {
		delete(p.reqs, req.room)
	}
	req.state = psDone
}

// preallocated is decode's bootstrap handshake for a room.
func (p *prefillSched) preallocated(room uint64, peer *kvPeer) {
	p.mu.Lock()
	defer p.mu.Unlock()
	req, ok := p.reqs[room]
	if !ok {
		p.pending[room] = pendingPrealloc{peer: peer, at: time.Now()}
		return
	}
	if req.state == psBootstrap {
		req.peer, req.state = peer, psWaiting
		p.waiting = append(p.waiting, req)
		p.kick()
	}
}

// transferDone is decode's acknowledgement that it polled the room's KV as received.
func (p *prefillSched) transferDone(room uint64) {
	p.mu.Lock()
	if req, ok := p.reqs[room]; ok && req.state == psInflight {
		req.transferred = true
		if d := time.Since(req.sentAt); d > 0 {
			p.e.metrics.setKV(float64(req.bytes)/d.Seconds()/1e9, float64(d.Microseconds())/1000)
		}
	}
	p.mu.Unlock()
	p.kick()
}

// decodeAborted is the abort decode forwards over the transfer session.
func (p *prefillSched) decodeAborted(room uint64) {
	p.mu.Lock()
	req, ok := p.reqs[room]
	p.mu.Unlock()
	if ok {
		p.abort(req)
	}
}

// peerLost fails the transfers that were bound to a decode session that broke, e.g.
// because decode was restarted: the restart is what frees parked requests.
func (p *prefillSched) peerLost(peer *kvPeer) {
	reason := fmt.Sprintf(ReasonDecodeDead, peer.conn.RemoteAddr())
	if p.e.cfg.TransferBackend == "nixl" {
		reason = ReasonNixlSender
	}
	p.mu.Lock()
	for _, req := range p.reqs {
		if req.peer == peer && req.failReason == "" {
			req.failReason = reason
		}
	}
	for room, pp := range p.pending {
		if pp.peer == peer {
			delete(p.pending, room)
		}
	}
	p.mu.Unlock()
	p.kick()
}

func (p *prefillSched) healthStuck() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stalled
}

// roundTrip is a request the scheduler loop must read and answer, like
// get_internal_state behind /server_info: a loop stuck in a forward pass
// (prefill-stall) answers it only when the pass returns.
func (p *prefillSched) roundTrip(ctx context.Context) error {
	p.mu.Lock()
	stalled, unstall := p.stalled && p.inForward, p.unstall
	p.mu.Unlock()
	if !stalled {
		return nil
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-unstall:
		return nil
	}
}

// watchdogProbe reads what SGLang's watchdog reads: forward_ct and cur_batch.
func (p *prefillSched) watchdogProbe() (int, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.iter, p.inForward
}

func (p *prefillSched) watchdogFire() {
	p.mu.Lock()
	p.watchdogFired = true
	p.mu.Unlock()
}

func (p *prefillSched) close() { p.sender.close() }
