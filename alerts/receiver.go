package alerts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runbot/runbot/chat"
	"github.com/runbot/runbot/dispatch"
	"github.com/runbot/runbot/internal/heartbeat"
	"github.com/runbot/runbot/internal/secret"
	"github.com/runbot/runbot/runbooks/catalog"
	"github.com/runbot/runbot/store"
)

// Endpoints (Alert.Source) that deliver alerts.
const (
	SourceAlertmanager = "alertmanager"
	SourceGeneric      = "generic"
)

// Config configures the alert webhooks.
type Config struct {
	// BearerToken and/or BasicUser+BasicPass authenticate deliveries; at
	// least one is required.
	BearerToken secret.Ref
	BasicUser   string
	BasicPass   secret.Ref
	// DedupWindow is how long a firing alert's repeats fold into the run
	// it started (1h when 0). The store enforces it; pass the same value
	// to store.WithDedupWindow. The receiver uses it to find, at start, alerts
	// accepted before a restart whose run was never queued.
	DedupWindow time.Duration
	// MaxQueue bounds alert runs queued or running (256 when 0); beyond
	// it, notifications that would start new runs get 503 and nothing is
	// recorded, so that the sender delivers them again later.
	MaxQueue int
	// MaxBody bounds a notification's body in bytes (1 MiB when 0).
	MaxBody int64
	// Channel is where alert messages go; the dispatcher's channel when empty.
	Channel string
	// Routes map alerts to runbooks, before the runbooks' own
	// triggers.alerts.
	Routes []Route
	// Generic, when set, enables POST /alerts/generic with this mapping.
	Generic *GenericMapping
	// Messages lays out alert messages: one summary per notification
	// group (MessagesGroup, the default) or one message per alert.
	Messages Messages
}

func (c Config) withDefaults() Config {
	if c.DedupWindow <= 0 {
		c.DedupWindow = time.Hour
	}
	if c.MaxQueue <= 0 {
		c.MaxQueue = 256
	}
	if c.MaxBody <= 0 {
		c.MaxBody = 1 << 20
	}
	if c.Messages == "" {
		c.Messages = MessagesGroup
	}
	return c
}

// Heartbeat is the heartbeat name of the alert intake loop.
const Heartbeat = "alert intake"

// alertsMaxGap is how long the intake loop may go without a beat before
// readiness fails: it beats every alertsTick when idle, and between
// alerts when busy; each alert's chat and store calls are bounded well
// below this.
const (
	alertsMaxGap = 2 * time.Minute
	alertsTick   = time.Second
	// storeTimeout bounds the store writes a notification waits for.
	storeTimeout = 10 * time.Second
	// chatTimeout bounds posting an alert's message before its run is
	// queued; the run goes on without a thread when the chat is slow.
	chatTimeout = 10 * time.Second
	// chatBackoff is how long alert messages are skipped after the chat
	// failed to take one.
	chatBackoff = 30 * time.Second
	// retryAfter is what a 503 asks the sender to wait, in seconds.
	retryAfter = 5
)

// Receiver takes alert notifications (Alertmanager's webhook, and a generic
// JSON webhook) and turns them into runs through the Dispatcher.
//
// A notification is answered 2xx once each of its alerts is durably
// recorded in the store; the rest happens in the intake loop (Run): the
// alert's message is posted and its run queued in that message's
// thread. One alert (by fingerprint) starts one run per dedup window and
// never a second while the first is queued or running; repeats update its
// message ("seen N times, last at …"), and its resolution is posted in the
// thread.
type Receiver struct {
	cfg   Config
	disp  *dispatch.Dispatcher
	store store.Store
	chat  chat.Chat
	auth  alertAuth
	// routes are the compiled routes alerts accepted from now on take; a
	// reload replaces them (SetRouting).
	routes  atomic.Pointer[Routing]
	generic *genericParser
	queue   *alertQueue
	metrics *alertMetrics
	log     *slog.Logger
	now     func() time.Time
	beat    *heartbeat.Monitor

	mu     sync.Mutex
	events []alertEvent
	wake   chan struct{}
	// inflight counts events not yet handled; handled is closed and
	// replaced each time one is.
	inflight int
	handled  chan struct{}
	// tracks are the alerts with a current trigger, by fingerprint, and
	// byWork the same by the id of their run's work.
	tracks map[string]*alertTrack
	byWork map[string]*alertTrack
	// groups are the notification groups with a summary message, by
	// channel and group key.
	groups map[string]*alertGroup

	// chatDown is until when alert messages are skipped, after the
	// chat failed (a direct chat, not the outbox, which only fails when the
	// store does).
	chatDown time.Time
}

// Routing is the alert routes compiled against one catalog of runbooks:
// the configured routes, then the runbooks' triggers.alerts.
type Routing struct{ routes []route }

// Routing compiles the receiver's configured routes and catalog's
// triggers, for a reload that installs a new catalog: an error means the
// routes do not fit it, and nothing changed.
func (a *Receiver) Routing(cat *catalog.Catalog) (*Routing, error) {
	routes, err := compileRoutes(a.cfg.Routes, cat)
	if err != nil {
		return nil, fmt.Errorf("alert routes: %w", err)
	}
	return &Routing{routes: routes}, nil
}

// SetRouting makes the alerts accepted from now on take r's routes;
// alerts accepted before keep the route they were given.
func (a *Receiver) SetRouting(r *Routing) { a.routes.Store(r) }

// Deps are what the receiver works with besides the Dispatcher: what
// every trigger takes (the store its deliveries are recorded in, the chat
// that gets the alerts' own messages, the heartbeat its lanes beat, the
// logger and clock), and nothing of its own.
type Deps struct {
	dispatch.TriggerDeps
}

// New checks the configuration, loads the credentials and compiles
// the routes (the configured ones, then the catalog's triggers.alerts).
func New(cfg Config, d *dispatch.Dispatcher, deps Deps) (*Receiver, error) {
	if d == nil || deps.Store == nil {
		return nil, errors.New("alert webhook: a dispatcher and a store are required")
	}
	cfg = cfg.withDefaults()
	auth, err := newAlertAuth(cfg)
	if err != nil {
		return nil, err
	}
	routes, err := compileRoutes(cfg.Routes, d.Catalog())
	if err != nil {
		return nil, fmt.Errorf("alert routes: %w", err)
	}
	deps.TriggerDeps = d.ForTrigger(deps.TriggerDeps, "alerts")
	a := &Receiver{
		cfg: cfg, disp: d, store: deps.Store, chat: deps.Chat, auth: auth, queue: newAlertQueue(cfg.MaxQueue),
		log: deps.Logger, now: deps.Now, beat: deps.Heartbeat,
		wake: make(chan struct{}, 1), tracks: map[string]*alertTrack{}, handled: make(chan struct{}),
		byWork: map[string]*alertTrack{}, groups: map[string]*alertGroup{},
	}
	a.routes.Store(&Routing{routes: routes})
	if cfg.Messages != MessagesGroup && cfg.Messages != MessagesAlert {
		return nil, fmt.Errorf("alert messages: %q is neither %q nor %q", cfg.Messages, MessagesGroup, MessagesAlert)
	}
	d.OnRunEnd(a.runEnded)
	if cfg.Generic != nil {
		if a.generic, err = compileGeneric(*cfg.Generic); err != nil {
			return nil, err
		}
	}
	a.metrics = newAlertMetrics(func() float64 { return float64(a.queue.depth()) }, cfg.MaxQueue)
	if a.beat != nil {
		a.beat.Register(Heartbeat, alertsMaxGap)
	}
	return a, nil
}

// Handler serves POST /alerts/alertmanager (Alertmanager's webhook,
// version 4) and, when a generic mapping is configured, POST
// /alerts/generic. Mount it at the server's root.
func (a *Receiver) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("POST /alerts/alertmanager", a.endpoint(SourceAlertmanager, parseAlertmanager))
	if a.generic != nil {
		mux.Handle("POST /alerts/generic", a.endpoint(SourceGeneric, a.generic.parse))
	}
	return mux
}

// alertAck is the body of a 2xx answer.
type alertAck struct {
	Status string `json:"status"`
	Alerts int    `json:"alerts"`
	// New alerts started a trigger (a run, unless their params were
	// invalid); Repeats folded into one; Unrouted match no route.
	New      int `json:"new"`
	Repeats  int `json:"repeats"`
	Resolved int `json:"resolved"`
	Unrouted int `json:"unrouted"`
	// Invalid new alerts are recorded but not run: their params are
	// invalid for their runbook (Problems says why, for the sender's log).
	Invalid  int      `json:"invalid,omitempty"`
	Problems []string `json:"problems,omitempty"`
}

// maxAckProblems bounds the problems an acknowledgement lists.
const maxAckProblems = 10

// alertReject is the body of an error answer.
type alertReject struct {
	Error string `json:"error"`
}

var errQueueFull = errors.New("too many alert runs queued")

func (a *Receiver) endpoint(source string, parse func([]byte) ([]Alert, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		code := a.serve(w, r, source, parse)
		a.metrics.ack.WithLabelValues(source, strconv.Itoa(code)).Observe(time.Since(start).Seconds())
	})
}

func (a *Receiver) serve(w http.ResponseWriter, r *http.Request, source string, parse func([]byte) ([]Alert, error)) int {
	a.metrics.notifications.WithLabelValues(source).Inc()
	reject := func(code int, reason, msg string) int {
		a.metrics.rejected.WithLabelValues(source, reason).Inc()
		a.log.Info("alert notification rejected", "endpoint", source, "status", code, "reason", msg)
		writeStatusJSON(w, code, alertReject{Error: msg})
		return code
	}
	if !a.auth.ok(r) {
		w.Header().Set("WWW-Authenticate", a.auth.challenge())
		return reject(http.StatusUnauthorized, "unauthorized", "missing or wrong credentials")
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, a.cfg.MaxBody))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return reject(http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("body is larger than the limit of %d bytes", a.cfg.MaxBody))
	case err != nil:
		return reject(http.StatusBadRequest, "invalid", "could not read the body: "+err.Error())
	}
	alerts, err := parse(body)
	var pe *PayloadError
	switch {
	case errors.As(err, &pe):
		return reject(pe.Status, "invalid", pe.Msg)
	case err != nil:
		return reject(http.StatusBadRequest, "invalid", err.Error())
	}
	ack, err := a.accept(r.Context(), alerts)
	switch {
	case errors.Is(err, errQueueFull):
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
		return reject(http.StatusServiceUnavailable, "queue_full",
			fmt.Sprintf("%d alert runs are queued or running (the limit); nothing was recorded, deliver again later", a.queue.depth()))
	case err != nil:
		// 503 with Retry-After is what tells Alertmanager to deliver
		// again; a 500 reads as a bug in the receiver.
		a.log.Error("alert not recorded", "endpoint", source, "err", err)
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
		return reject(http.StatusServiceUnavailable, "store_error", "could not record the alert; deliver again later")
	}
	for _, al := range alerts {
		a.metrics.alerts.WithLabelValues(source, string(al.Status)).Inc()
	}
	writeStatusJSON(w, http.StatusOK, ack)
	return http.StatusOK
}

// accept records a notification's alerts durably and hands them to the
// intake loop. It refuses with errQueueFull, recording nothing, when the
// alerts that may start runs do not fit in the queue.
func (a *Receiver) accept(ctx context.Context, alerts []Alert) (alertAck, error) {
	now := a.now()
	common := commonLabels(alerts)
	routes := make([]*routed, len(alerts))
	mayStart := make([]bool, len(alerts))
	starts := 0
	for i, al := range alerts {
		routes[i] = routeAlert(a.routes.Load().routes, al)
	}
	a.mu.Lock()
	for i, al := range alerts {
		if al.Status == store.AlertFiring && routes[i] != nil && !a.activeLocked(al.Fingerprint, now) {
			mayStart[i] = true
			starts++
		}
	}
	a.mu.Unlock()
	if !a.queue.reserve(starts) {
		if err := a.queue.refresh(ctx, a.store, now, 250*time.Millisecond); err != nil {
			a.log.Warn("alert queue not refreshed", "err", err)
		}
		if !a.queue.reserve(starts) {
			return alertAck{}, errQueueFull
		}
	}

	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	ack := alertAck{Status: "accepted", Alerts: len(alerts)}
	events := make([]alertEvent, 0, len(alerts))
	var rerr error
	for i, al := range alerts {
		raw, err := json.Marshal(al)
		if err != nil {
			rerr = fmt.Errorf("encode alert %s: %w", al.Fingerprint, err)
		}
		var st store.AlertState
		if rerr == nil {
			st, rerr = a.store.RecordAlert(ctx, al.Fingerprint, raw, now)
		}
		if rerr != nil {
			// Free the slots of this alert and the ones not recorded.
			for _, m := range mayStart[i:] {
				if m {
					a.queue.release()
				}
			}
			break
		}
		ev := alertEvent{alert: al, raw: raw, state: st, route: routes[i], reserved: mayStart[i], groupSize: len(alerts), common: common}
		if ev.reserved && !st.Fresh {
			a.queue.release()
			ev.reserved = false
		}
		if routes[i] == nil {
			ack.Unrouted++
			a.metrics.unrouted.Inc()
		}
		switch {
		case al.Status == store.AlertResolved:
			ack.Resolved++
		case st.Fresh:
			ack.New++
			if routes[i] != nil {
				if problem := a.check(ctx, routes[i]); problem != "" {
					ack.Invalid++
					if len(ack.Problems) < maxAckProblems {
						ack.Problems = append(ack.Problems, al.Name()+" ("+al.Fingerprint+"): "+problem)
					}
				}
			}
		default:
			ack.Repeats++
			a.metrics.deduped.Inc()
		}
		events = append(events, ev)
	}
	// What was recorded is processed even when a later alert failed: the
	// sender's retry of the whole group then finds it a repeat.
	a.enqueue(events)
	if rerr != nil {
		return alertAck{}, rerr
	}
	return ack, nil
}

// activeLocked reports whether an alert has a trigger whose run a new
// delivery must not repeat: within the dedup window, or still queued or
// running. Callers hold a.mu.
func (a *Receiver) activeLocked(fp string, now time.Time) bool {
	t := a.tracks[fp]
	if t == nil || t.resolved {
		return false
	}
	return now.Before(t.triggeredAt.Add(a.cfg.DedupWindow)) || (t.workID != "" && a.queue.unfinished(t.workID))
}

func (a *Receiver) enqueue(evs []alertEvent) {
	if len(evs) == 0 {
		return
	}
	a.mu.Lock()
	a.events = append(a.events, evs...)
	a.inflight += len(evs)
	a.mu.Unlock()
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

func (a *Receiver) take() []alertEvent {
	a.mu.Lock()
	defer a.mu.Unlock()
	evs := a.events
	a.events = nil
	return evs
}

// done marks one event handled.
func (a *Receiver) done() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.inflight--
	close(a.handled)
	a.handled = make(chan struct{})
}

// settled waits until every accepted alert was handled by the intake
// loop (its message posted, its run queued).
func (a *Receiver) settled(ctx context.Context) error {
	for {
		a.mu.Lock()
		n, handled := a.inflight, a.handled
		a.mu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-handled:
		case <-ctx.Done():
			return fmt.Errorf("waiting for %d alert(s) to be handled: %w", n, context.Cause(ctx))
		}
	}
}

// channel is where alert messages go.
func (a *Receiver) channel() string {
	if a.cfg.Channel != "" {
		return a.cfg.Channel
	}
	return a.disp.Channel()
}

// liveMessage keeps the alert message at ref up to date.
func (a *Receiver) liveMessage(ref chat.Ref) *dispatch.Live {
	return dispatch.NewLive(a.chat, a.disp.Go, a.log, ref, a.disp.UpdateInterval())
}

// QueueDepth is how many alert runs are queued or running.
func (a *Receiver) QueueDepth() int { return a.queue.depth() }

func writeStatusJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
