package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runbot/runbot/chat"
	"github.com/runbot/runbot/internal/redact"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/catalog"
	"github.com/runbot/runbot/runbooks/engine"
	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/store"
)

// Request is one trigger of a runbook, from any source.
type Request struct {
	// Key deduplicates: a request with the Key of earlier work is that
	// work, not new work (a chat command's delivery ID, an alert's TriggerKey, a
	// schedule's name and tick). Empty means no deduplication.
	Key         string
	Runbook     string
	Params      map[string]string
	RequestedBy string
	// Source is store.TriggerChat, TriggerAlert or TriggerSchedule.
	Source store.Trigger
	// Channel is where the run's message goes; the configured channel
	// when empty. Thread, when set, posts it as a reply in that thread
	// (an alert's message: the id of the thread's first message).
	Channel string
	Thread  string
	// ReplyTo is the opaque reply target the request's command carried
	// (chat.Command.ReplyTo), used to tell the requester privately when
	// the run's message cannot be posted. The chat platform interprets it.
	ReplyTo string
	// Payload is what the trigger carried (the alert), kept with the work.
	Payload json.RawMessage
	// Quiet runs post no message of their own unless someone must act on
	// it (a fix to approve) or the run could not start: an alert of a
	// group shows its verdict in the group's summary (OnRunEnd) instead
	// of adding one more message to a storm.
	Quiet bool
}

// Accepted says what became of a submitted request.
type Accepted struct {
	WorkID string
	// Duplicate is set when the request's Key matched earlier work; RunID
	// is that work's run once it has one, and Done says that work is over.
	Duplicate bool
	RunID     string
	Done      bool
}

// UnknownRunbookError is a request for a runbook the catalog does not have.
type UnknownRunbookError struct {
	Name       string
	Suggestion string
}

func (e *UnknownRunbookError) Error() string {
	if e.Suggestion != "" {
		return fmt.Sprintf("unknown runbook %q (did you mean %q?)", e.Name, e.Suggestion)
	}
	return fmt.Sprintf("unknown runbook %q", e.Name)
}

// Dispatcher runs triggered runbooks. Submit validates and queues a
// request durably; background workers claim queued work, run it, record
// it in the store, keep its chat message up to date, and propose the
// remediation its diagnosis asks for. Approvals of that remediation come
// back through Vote.
type Dispatcher struct {
	// set is the catalog, engine, remediator and the recorder over them
	// (the one path that runs are recorded through) that work starting
	// now uses; Swap replaces it.
	set   atomic.Pointer[runSet]
	store store.Store
	// chat posts the runs' messages; nil when no chat platform is
	// configured: runs are recorded and logged.
	chat  chat.Chat
	tasks *tasks
	log   *slog.Logger
	now   func() time.Time

	channel      string
	runTimeout   time.Duration
	applyTimeout time.Duration
	gap          time.Duration
	// slots bounds concurrent runs; work waits in the queue for one.
	slots chan struct{}
	// waiting counts workers waiting for a slot, so that a sweep does not
	// start another one beside them.
	waiting atomic.Int32
	// timeline, when set, draws the picture posted in a run's thread
	// after its diagnosis, from the report as redactor hides it.
	timeline TimelineFunc
	redactor *redact.Redactor

	// sweepApplying holds the plans a sweep of this process, or a vote
	// From a report page it took, is applying, so that neither starts a
	// second apply beside one that has not yet moved its plan to applying.
	sweepApplying sync.Map
	// applies are the applies in flight, for Fence.
	applies fenceSet
	// awaySeen is the ID of the last audit entry of a vote cast away from
	// chat that a sweep brought to the plan's message (showAwayVotes).
	awaySeen atomic.Int64

	mu sync.Mutex
	// runs holds the state of runs whose message this process updates.
	runs map[string]*runState
	// ended are called when a run of this process ends (OnRunEnd).
	ended []func(RunEnd)
}

// Config tunes a Dispatcher; zero values take the defaults.
type Config struct {
	// Channel is where runs post when their request names no channel.
	Channel string
	// MaxConcurrentRuns bounds the runs in flight (default 8).
	MaxConcurrentRuns int
	// RunTimeout bounds one run (default 15m); ApplyTimeout one approved
	// remediation (default 30m).
	RunTimeout   time.Duration
	ApplyTimeout time.Duration
	// UpdateInterval is the least time between two updates of one message
	// (default 1s).
	UpdateInterval time.Duration
}

// Deps are what a Dispatcher drives. Chat is optional: without
// one, runs from every trigger are still queued, run, recorded and logged.
// Catalog, Engine and Remediator are the first Set; Swap replaces them.
type Deps struct {
	Catalog    *catalog.Catalog
	Engine     *engine.Engine
	Remediator *remediation.Remediator
	Store      store.Store
	Chat       chat.Chat
	// Logger is slog.Default() when nil; Now is time.Now when nil.
	Logger *slog.Logger
	Now    func() time.Time
	// Timeline, when set, renders the picture uploaded into a run's
	// thread after its diagnosis (timeline.ForChat); Redactor, when set,
	// hides secrets in the report first (the chat's redaction).
	Timeline TimelineFunc
	Redactor *redact.Redactor
}

// New builds the core every trigger submits to. It knows no chat
// platform: it posts through deps.Chat when there is one.
func New(cfg Config, deps Deps) (*Dispatcher, error) {
	if deps.Store == nil {
		return nil, errors.New("dispatcher: a store is required")
	}
	set, err := newRunSet(Set{Catalog: deps.Catalog, Engine: deps.Engine, Remediator: deps.Remediator}, deps.Store)
	if err != nil {
		return nil, err
	}
	if cfg.MaxConcurrentRuns <= 0 {
		cfg.MaxConcurrentRuns = 8
	}
	if cfg.RunTimeout <= 0 {
		cfg.RunTimeout = 15 * time.Minute
	}
	if cfg.ApplyTimeout <= 0 {
		cfg.ApplyTimeout = 30 * time.Minute
	}
	if cfg.UpdateInterval <= 0 {
		cfg.UpdateInterval = time.Second
	}
	log := deps.Logger
	if log == nil {
		log = slog.Default()
	}
	now := deps.Now
	if now == nil {
		now = time.Now
	}
	d := &Dispatcher{
		store: deps.Store,
		chat:  deps.Chat, tasks: newTasks(log), log: log, now: now,
		channel: cfg.Channel, runTimeout: cfg.RunTimeout, applyTimeout: cfg.ApplyTimeout, gap: cfg.UpdateInterval,
		slots: make(chan struct{}, cfg.MaxConcurrentRuns), runs: map[string]*runState{},
		timeline: deps.Timeline, redactor: deps.Redactor,
	}
	d.set.Store(set)
	return d, nil
}

// Catalog is the runbooks requests may name now; a reload (Swap) may
// replace it.
func (d *Dispatcher) Catalog() *catalog.Catalog { return d.current().catalog }

// Channel is where runs post when their request names no channel.
func (d *Dispatcher) Channel() string { return d.channel }

// Now is the dispatcher's clock.
func (d *Dispatcher) Now() time.Time { return d.now() }

// Chat is the chat runs post to, or nil.
func (d *Dispatcher) Chat() chat.Chat { return d.chat }

// UpdateInterval is the least time between two updates of one message.
func (d *Dispatcher) UpdateInterval() time.Duration { return d.gap }

// RunTimeout bounds one run; ApplyTimeout one approved remediation.
func (d *Dispatcher) RunTimeout() time.Duration   { return d.runTimeout }
func (d *Dispatcher) ApplyTimeout() time.Duration { return d.applyTimeout }

// Go runs fn in the background under its own deadline, tracked so that
// Shutdown waits for it; it fails once Shutdown began.
func (d *Dispatcher) Go(name string, timeout time.Duration, fn func(context.Context)) error {
	return d.tasks.Go(name, timeout, fn)
}

// Shutdown stops taking new work and waits for runs, applies and message
// updates in flight; when ctx ends first it cancels them.
func (d *Dispatcher) Shutdown(ctx context.Context) error { return d.tasks.Shutdown(ctx) }

// Runbook returns the named runbook, or an *UnknownRunbookError.
func (d *Dispatcher) Runbook(name string) (*runbooks.Runbook, error) {
	return d.current().runbook(name)
}

// MayApprove says whether user is one of approvers, groups resolved as the
// Remediator resolves them.
func (d *Dispatcher) MayApprove(ctx context.Context, approvers []string, user string) (bool, error) {
	return d.current().rem.MayApprove(ctx, approvers, user)
}

// Rearm closes the circuit breaker a failed fix opened for a diagnosis on
// a deployment (remediation.Remediator.Rearm): user must be one who may
// approve the plan that failed.
func (d *Dispatcher) Rearm(ctx context.Context, deployment, diagnosis, user string) (store.Plan, error) {
	rem := d.current().rem
	if rem == nil {
		return store.Plan{}, errors.New("re-arm: remediation is not configured")
	}
	return rem.Rearm(ctx, deployment, diagnosis, user)
}

// Check validates a request as Submit does (the runbook exists, its params
// are valid and its targets resolve) without queueing it.
func (d *Dispatcher) Check(ctx context.Context, runbook string, params map[string]string) error {
	set := d.current()
	rb, err := set.runbook(runbook)
	if err != nil {
		return err
	}
	_, err = set.engine.Prepare(ctx, rb, params)
	return err
}

// Idle waits until no background work (run, apply, message update) is in
// flight; new work may start after.
func (d *Dispatcher) Idle(ctx context.Context) error { return d.tasks.Idle(ctx) }

// ActiveView is the message of a run this process is carrying out, as it
// stands now; ok is false when the run is not in flight here.
func (d *Dispatcher) ActiveView(runID string) (m chat.Message, ok bool) {
	rs := d.active(runID)
	if rs == nil {
		return chat.Message{}, false
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.Message(), true
}

// WorkThread says where queued work's run posts: the channel and the thread
// its request named (an alert's message), as Submit kept them.
func WorkThread(w store.Work) (channel, thread string) {
	var pl workPayload
	if len(w.Payload) == 0 || json.Unmarshal(w.Payload, &pl) != nil {
		return "", ""
	}
	return pl.Channel, pl.Thread
}

// WorkQuiet reports whether work's run posts a message only when someone
// must act on it (Request.Quiet).
func WorkQuiet(w store.Work) bool {
	var pl workPayload
	return len(w.Payload) > 0 && json.Unmarshal(w.Payload, &pl) == nil && pl.Quiet
}

// liveMessage keeps the message at ref up to date, or is nil without chat.
func (d *Dispatcher) liveMessage(ref chat.Ref) *Live {
	if d.chat == nil {
		return nil
	}
	return NewLive(d.chat, d.tasks.Go, d.log, ref, d.gap)
}

// Submit validates a request (the runbook exists, its params are valid and
// its targets resolve) and queues it. It returns quickly: the run happens
// in the background. A *runbooks.ParamError, an *UnknownRunbookError or an
// inventory error means the request was bad; nothing was queued.
func (d *Dispatcher) Submit(ctx context.Context, req Request) (Accepted, error) {
	if !req.Source.Valid() {
		return Accepted{}, fmt.Errorf("submit %s: invalid source %q", req.Runbook, req.Source)
	}
	set := d.current()
	rb, err := set.runbook(req.Runbook)
	if err != nil {
		return Accepted{}, err
	}
	if _, err := set.engine.Prepare(ctx, rb, req.Params); err != nil {
		return Accepted{}, err
	}
	return d.enqueue(ctx, rb, req)
}

// Enqueue queues a request that Check accepted, without validating it
// again (an alert checks before it posts the message its run threads
// under). The worker validates once more before it runs.
func (d *Dispatcher) Enqueue(ctx context.Context, req Request) (Accepted, error) {
	if !req.Source.Valid() {
		return Accepted{}, fmt.Errorf("submit %s: invalid source %q", req.Runbook, req.Source)
	}
	rb, err := d.current().runbook(req.Runbook)
	if err != nil {
		return Accepted{}, err
	}
	return d.enqueue(ctx, rb, req)
}

func (d *Dispatcher) enqueue(ctx context.Context, rb *runbooks.Runbook, req Request) (Accepted, error) {
	payload, err := json.Marshal(workPayload{Channel: req.Channel, Thread: req.Thread, ReplyTo: req.ReplyTo, Trigger: req.Payload, Quiet: req.Quiet})
	if err != nil {
		return Accepted{}, fmt.Errorf("submit %s: encode payload: %w", rb.Name, err)
	}
	w, created, err := d.store.Enqueue(ctx, store.Work{
		Key: req.Key, Trigger: req.Source, Runbook: rb.Name, Params: req.Params, RequestedBy: req.RequestedBy, Payload: payload,
	})
	if err != nil {
		return Accepted{}, fmt.Errorf("submit %s: %w", rb.Name, err)
	}
	if !created {
		d.log.Info("duplicate trigger ignored", "key", req.Key, "work", w.ID, "run", w.RunID)
		return Accepted{WorkID: w.ID, Duplicate: true, RunID: w.RunID, Done: w.State == store.WorkDone}, nil
	}
	// The params say what was asked: secret ones masked, the rest
	// redacted by serve's log handler as Slack does.
	d.log.Info("run queued", "work", w.ID, "runbook", rb.Name, "source", req.Source, "requested_by", req.RequestedBy, "params", rb.MaskSecrets(req.Params))
	if err := d.kick(); err != nil {
		return Accepted{WorkID: w.ID}, fmt.Errorf("submit %s: queued as %s but not started: %w", rb.Name, w.ID, err)
	}
	return Accepted{WorkID: w.ID}, nil
}

// Resume starts workers for work queued before a restart (run
// store.MarkInterrupted first, so that work a dead process had started is
// queued again).
func (d *Dispatcher) Resume(ctx context.Context) error {
	return d.kick()
}

// kick starts a worker, which claims and runs queued work until none is
// left. Workers claim the oldest work first, whoever queued it.
func (d *Dispatcher) kick() error {
	return d.tasks.Go("worker", 24*time.Hour, d.work)
}

func (d *Dispatcher) work(ctx context.Context) {
	for {
		d.waiting.Add(1)
		select {
		case d.slots <- struct{}{}:
			d.waiting.Add(-1)
		case <-ctx.Done():
			d.waiting.Add(-1)
			return
		}
		w, err := d.claim(ctx)
		if err != nil {
			<-d.slots
			if !errors.Is(err, store.ErrNoWork) {
				d.log.Error("claim queued work", "err", err)
			}
			return
		}
		// Each run has its own deadline, so that a long run does not eat
		// into the next one's.
		err = d.tasks.Go("run "+w.Runbook, d.runTimeout, func(ctx context.Context) {
			free := sync.OnceFunc(func() { <-d.slots })
			defer free()
			d.execute(ctx, w, free)
		})
		if err != nil {
			<-d.slots
			d.log.Warn("queued work left for the next start", "work", w.ID, "err", err)
			return
		}
	}
}

func (d *Dispatcher) claim(ctx context.Context) (store.Work, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return d.store.ClaimWork(ctx)
}

// hold returns the state of a run whose message this process updates,
// loading it when no one holds it yet, so that every update of one message
// goes through one liveMessage. Call release when done.
func (d *Dispatcher) hold(runID string, load func() (*runState, error)) (*runState, func(), error) {
	d.mu.Lock()
	rs, ok := d.runs[runID]
	if ok {
		rs.refs++
	}
	d.mu.Unlock()
	if !ok {
		fresh, err := load()
		if err != nil {
			return nil, nil, err
		}
		d.mu.Lock()
		if rs, ok = d.runs[runID]; !ok {
			rs = fresh
			d.runs[runID] = rs
		}
		rs.refs++
		d.mu.Unlock()
	}
	release := func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		if rs.refs--; rs.refs == 0 {
			delete(d.runs, runID)
		}
	}
	return rs, release, nil
}

// active returns the state of a run held by this process, or nil.
func (d *Dispatcher) active(runID string) *runState {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.runs[runID]
}
