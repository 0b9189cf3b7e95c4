package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

type decodeState int

const (
	dsPrealloc decodeState = iota // waiting for the KV reservation and bootstrap handshake
	dsTransfer                    // handshake sent, KV not yet polled as complete
	dsRunning                     // in the running batch, producing tokens
	dsDone
	// dsInbox: sent to the scheduler while its event loop was blocked (decode-hang);
	// the loop never read it, so it is in no queue.
	dsInbox
)

// decodeReq is one request inside the decode engine.
type decodeReq struct {
	rid       string
	room      uint64
	rank      int // DP rank that holds it
	prompt    int
	maxTokens int
	arrived   time.Time
	state     decodeState
	session   *kvSession
	kvReady   bool
	generated int
	out       chan decodeEvent
	// abortPending and failPending are an AbortReq and a transfer failure that
	// arrived while the event loop was blocked: recorded, never processed.
	abortPending bool
	failPending  string
}

// decodeEvent is one token, or the failure of the request, handed from the scheduler
// to the request's HTTP handler.
type decodeEvent struct {
	token string
	final bool
	err   string
}

// decodeSched is the decode engine's scheduler: a prealloc queue, a transfer queue
// and a running batch, driven by one event loop that runs one decode iteration per
// token interval and logs "Decode batch" every --decode-log-interval iterations.
type decodeSched struct {
	e  *Engine
	kv *kvReceiver

	mu             sync.Mutex
	reqs           map[uint64]*decodeReq
	running        []*decodeReq
	wedge          wedgeModel
	forwardCt      int
	rankTokens     []int       // tokens generated per DP rank since its last batch line
	rankLogAt      []time.Time // time of each DP rank's last batch line
	waitingTimeout time.Duration
	warnedTimeout  bool
	// curBatch is SGLang's cur_batch != None: the loop's current iteration has a
	// batch. The watchdog only watches while it is set.
	curBatch bool
	// hang is the blocked event loop of the decode-hang fault (nil: not hung).
	hang *hangState
	// inbox holds the requests sent to a blocked loop, which it never read.
	inbox []*decodeReq
	// itl is the slow-decode fault's inter-token latency (0: the normal pace).
	itl           time.Duration
	watchdogFired bool

	wake chan struct{}
}

func newDecodeSched(e *Engine) *decodeSched {
	n := e.cfg.Topology.LoggingRanks()
	d := &decodeSched{
		e: e, reqs: map[uint64]*decodeReq{}, wake: make(chan struct{}, 1),
		wedge:          newWedgeModel(!e.cfg.DisableOverlap, e.cfg.Sim.WedgeBurst, e.cfg.Sim.WedgeWindow),
		rankTokens:     make([]int, n),
		rankLogAt:      make([]time.Time, n),
		waitingTimeout: envDuration("SGLANG_DISAGGREGATION_WAITING_TIMEOUT", 300*time.Second),
	}
	now := time.Now()
	for i := range d.rankLogAt {
		d.rankLogAt[i] = now
	}
	d.kv = newKVReceiver(d)
	return d
}

func (d *decodeSched) kick() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

func (d *decodeSched) ranks() int { return len(d.rankTokens) }

// serveChat runs one request through decode: reserve KV, hand-shake with the
// prefill's bootstrap port, wait for the KV transfer, then stream tokens.
func (d *decodeSched) serveChat(w http.ResponseWriter, r *http.Request, c *chatRequest, rid string) {
	room := *c.BootstrapRoom
	req := &decodeReq{
		rid: rid, room: room, rank: int(room % uint64(d.ranks())), prompt: c.promptTokens(),
		maxTokens: c.maxTokens(d.e.cfg.Sim.DefaultMaxTokens), arrived: time.Now(), state: dsPrealloc,
	}
	req.out = make(chan decodeEvent, req.maxTokens+1)
	switch d.admit(req) {
	case admitDuplicate:
		apiError(w, http.StatusBadRequest, "BadRequestError", fmt.Sprintf("bootstrap_room %d is already in use", room))
		return
	case admitInbox:
		d.waitInbox(r, req)
		return
	}
	addr := net.JoinHostPort(c.BootstrapHost, strconv.Itoa(*c.BootstrapPort))
	if err := d.handshake(r.Context(), req, addr); err != nil {
		d.e.diag.Warn("bootstrap handshake failed", "room", room, "err", err)
		d.e.log.Logf(d.e.cfg.Topology.Prefix(req.rank, d.e.cfg.Topology.GlobalTP(req.rank)),
			"Error fetching prefill parallel info from bootstrap: %v", err)
		d.fail(req, ReasonPrefillDead)
	}
	d.stream(w, r, c, req)
}

type admitResult int

const (
	admitted admitResult = iota
	admitDuplicate
	admitInbox // the event loop is blocked and will never read the request
)

func (d *decodeSched) admit(req *decodeReq) admitResult {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.hang != nil {
		req.state = dsInbox
		d.inbox = append(d.inbox, req)
		return admitInbox
	}
	if _, dup := d.reqs[req.room]; dup {
		return admitDuplicate
	}
	d.reqs[req.room] = req
	return admitted
}

// waitInbox holds a request that reached a blocked scheduler: the HTTP process took
// it and forwarded it, the loop never read it, so nothing is pre-allocated, no
// handshake reaches prefill and no byte goes back. When the client gives up, its
// AbortReq joins the request in the unread input; nothing is logged.
func (d *decodeSched) waitInbox(r *http.Request, req *decodeReq) {
	<-r.Context().Done()
	d.mu.Lock()
	req.abortPending = true
	d.mu.Unlock()
}

// handshake tells prefill that KV for the room is reserved. This is control plane: it
// keeps working while the scheduler is wedged, which is why prefill still prefills.
// A blocked event loop (decode-hang) pre-allocates nothing, so then nothing is sent.
func (d *decodeSched) handshake(ctx context.Context, req *decodeReq, addr string) error {
	s, err := d.kv.session(ctx, addr)
	if err != nil {
		return err
	}
	d.mu.Lock()
	if req.state != dsPrealloc || d.hang != nil {
		d.mu.Unlock()
		return nil
	}
	req.session, req.state = s, dsTransfer
	d.mu.Unlock()
	return d.kv.send(s, kvPrealloc, req.room)
}

// stream relays the scheduler's tokens to the client. Nothing at all is written
// before the first token, so a request stuck in the transfer queue returns zero bytes.
func (d *decodeSched) stream(w http.ResponseWriter, r *http.Request, c *chatRequest, req *decodeReq) {
	model := d.e.cfg.ServedModelName
	var text strings.Builder
	started := false
	flusher, _ := w.(http.Flusher)
	for {
		select {
		case <-r.Context().Done():
			d.e.afterDisconnect(req.arrived, func() { d.abort(req) })
			return
		case ev := <-req.out:
			if ev.err != "" {
				if !started {
					apiError(w, http.StatusInternalServerError, "InternalServerError", ev.err)
				}
				return
			}
			if !started {
				started = true
				d.e.metrics.observeTTFT(time.Since(req.arrived).Seconds())
				if c.Stream {
					w.Header().Set("Content-Type", "text/event-stream")
					w.Header().Set("Cache-Control", "no-cache")
					w.WriteHeader(http.StatusOK)
					_, _ = w.Write(sseChunk(req.rid, model, "assistant", "", nil))
				}
			}
			if c.Stream {
				_, _ = w.Write(sseChunk(req.rid, model, "", ev.token, nil))
				if flusher != nil {
					flusher.Flush()
				}
			} else {
				text.WriteString(ev.token)
			}
			if ev.final {
				d.e.metrics.finished(time.Since(req.arrived).Seconds(), req.prompt, req.maxTokens)
				if c.Stream {
					_, _ = w.Write(sseChunk(req.rid, model, "", "", "length"))
					_, _ = w.Write([]byte("data: [DONE]\n\n"))
				} else {
					w.Header().Set("Content-Type", "application/json")
					_ = json.NewEncoder(w).Encode(completion(req.rid, model, text.String(), req.prompt, req.generated, "length"))
				}
				return
			}
		}
	}
}

// logFailure prints SGLang's per-rank "Decode transfer failed" line. Caller holds d.mu.
func (d *decodeSched) logFailure(req *decodeReq, reason string) {
	t := d.e.cfg.Topology
	for _, h := range t.HolderRanks(req.rank) {
		d.e.log.Logf(t.Prefix(h[0], h[1]), "%s", d.e.transferFailedLine(h[1], req.rid, req.room, reason))
	}
	d.e.metrics.addTransferFailed(req.rank)
}

// abort handles a client disconnect (AbortReq). An abort of a request still waiting
// for its KV is logged as a failed transfer, forwarded to prefill, and shown to the
// wedge model; that is how a burst of aborts can wedge the overlap scheduler.
func (d *decodeSched) abort(req *decodeReq) {
	d.mu.Lock()
	st := req.state
	if st == dsDone {
		d.mu.Unlock()
		return
	}
	if d.hang != nil {
		// The AbortReq waits in the blocked loop's input: no line, no forward to
		// prefill, the request stays where it is.
		req.abortPending = true
		d.mu.Unlock()
		return
	}
	d.removeLocked(req)
	wedgedNow := false
	if st == dsPrealloc || st == dsTransfer {
		d.logFailure(req, ReasonAborted)
		wedgedNow = d.wedge.observeAbort(time.Now())
	}
	sess := req.session
	d.mu.Unlock()
	if wedgedNow {
		d.e.diag.Warn("decode scheduler wedged: burst of in-flight transfer aborts with the overlap schedule on",
			"burst", d.e.cfg.Sim.WedgeBurst, "window", d.e.cfg.Sim.WedgeWindow)
	}
	if sess != nil {
		_ = d.kv.send(sess, kvAbort, req.room)
	}
	d.kick()
}

// fail ends a request that is still waiting for KV with a transfer error, which SGLang
// turns into an HTTP 500.
func (d *decodeSched) fail(req *decodeReq, reason string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.failLocked(req, reason)
}

func (d *decodeSched) failLocked(req *decodeReq, reason string) {
	if req.state != dsPrealloc && req.state != dsTransfer {
		return
	}
	if d.hang != nil {
		// A failure is only seen, logged and answered when the loop polls the
		// receiver, which a blocked loop never does.
		if req.failPending == "" {
			req.failPending = reason
		}
		return
	}
	d.removeLocked(req)
	d.logFailure(req, reason)
	req.out <- decodeEvent{err: fmt.Sprintf("KVTransferError(bootstrap_room=%d): %s", req.room, reason)}
}

// removeLocked takes a request out of every queue. Caller holds d.mu.
func (d *decodeSched) removeLocked(req *decodeReq) {
	if d.reqs[req.room] == req {
		delete(d.reqs, req.room)
	}
	if req.state == dsRunning {
		for i, x := range d.running {
			if x == req {
				d.running = append(d.running[:i], d.running[i+1:]...)
				break
			}
		}
	}
	req.state = dsDone
}

// kvArrived is called by the transfer engine when a room's KV bytes have landed. The
// transfer only completes when the scheduler polls it, which a wedged scheduler never does.
func (d *decodeSched) kvArrived(room uint64, _ int) {
	d.mu.Lock()
	if req, ok := d.reqs[room]; ok && req.state == dsTransfer {
		req.kvReady = true
	}
	d.mu.Unlock()
	d.kick()
}

func (d *decodeSched) kvFailed(room uint64, reason string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if req, ok := d.reqs[room]; ok {
		d.failLocked(req, reason)
	}
}

// sessionLost fails every transfer that depended on a prefill session that broke,
// e.g. because prefill was restarted.
func (d *decodeSched) sessionLost(s *kvSession) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, req := range d.reqs {
		if req.session == s {
			d.failLocked(req, ReasonPrefillDead)
		}
	}
}

// healthStuck: the health request is served by the scheduler loop like any other
// (through a fake bootstrap in PD mode), so a wedged but spinning loop answers it and
// a blocked loop (decode-hang) never does.
func (d *decodeSched) healthStuck() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.hang != nil
}

// roundTrip is a request the scheduler loop must read and answer, like
// get_internal_state behind /server_info: it waits for as long as the loop is
// blocked, i.e. until the client gives up.
func (d *decodeSched) roundTrip(ctx context.Context) error {
	d.mu.Lock()
	hung := d.hang != nil
	d.mu.Unlock()
	if !hung {
		return nil
	}
	<-ctx.Done()
	return ctx.Err()
}

func (d *decodeSched) close() { d.kv.close() }
