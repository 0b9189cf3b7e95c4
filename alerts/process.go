package alerts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"sync"
	"time"

	"github.com/runbot/runbot/chat"
	"github.com/runbot/runbot/dispatch"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runview"
	"github.com/runbot/runbot/store"
)

// alertEvent is one recorded delivery of one alert, for the intake loop.
type alertEvent struct {
	alert Alert
	raw   []byte
	state store.AlertState
	route *routed
	// reserved is set when the delivery holds a queue slot, which the
	// loop turns into work or frees.
	reserved bool
	// groupSize counts the alerts of the notification the alert came in,
	// and common are the labels they all share.
	groupSize int
	common    map[string]string
}

// alertTrack is an alert with a current trigger: its run and its chat
// message. The intake loop owns it; fields the webhook reads (resolved,
// triggeredAt, workID) change under Alerts.mu.
type alertTrack struct {
	alert       Alert
	route       *routed
	key         string
	triggeredAt time.Time
	workID      string
	resolved    bool
	resolvedAt  time.Time
	// closedAt is when the resolution arrived, by runbot's clock.
	closedAt time.Time

	seen    int
	lastAt  time.Time
	problem string
	// unqueued says the problem is that queueing the run failed: the
	// orphan check queues it again (recoverOrphans), into thread (the
	// alert's message or its group's summary), quiet as it was asked.
	unqueued bool
	thread   string
	quiet    bool
	channel  string
	ts       string
	live     *dispatch.Live

	// labels are the alert's labels when it triggered, for its group's
	// summary; group is that summary, nil when the alert has its own
	// message.
	labels map[string]string
	group  *alertGroup
	// runID, verdict and verdictStatus are set (under Alerts.mu) when the
	// run ends; spoke says the run posted a message of its own.
	runID         string
	verdict       string
	verdictStatus chat.Status
	spoke         bool
}

// Run is the intake loop: it first queues the runs of alerts that were
// accepted before a restart but never queued, then posts each accepted
// alert's message, queues its run, and keeps its message up to date,
// until ctx ends. Alerts accepted but not yet handled when it returns are
// in the store, and the next start picks them up.
func (a *Receiver) Run(ctx context.Context) error {
	switch err := a.recover(ctx); {
	case err == nil:
	case ctx.Err() != nil:
		// Stopped while starting: the next start checks them.
		a.log.Info("stopped before checking the alerts accepted before the restart", "err", err)
	default:
		a.log.Error("alerts accepted before the restart not checked", "err", err)
	}
	tick := time.NewTicker(alertsTick)
	defer tick.Stop()
	lastOrphans := a.now()
	shards := make([]*intakeShard, intakeShards)
	var wg sync.WaitGroup
	defer wg.Wait()
	for i := range shards {
		shards[i] = &intakeShard{wake: make(chan struct{}, 1)}
		wg.Go(func() { a.runShard(ctx, shards[i]) })
	}
	for {
		a.heartbeat()
		for _, ev := range a.take() {
			shards[shardOf(ev.alert.Fingerprint)].push(ev)
		}
		select {
		case <-a.wake:
		case <-tick.C:
			a.housekeep(ctx)
			if now := a.now(); now.Sub(lastOrphans) >= orphanCheckEvery {
				lastOrphans = now
				if err := a.recoverOrphans(ctx); err != nil {
					a.log.Warn("alerts accepted by other processes not checked", "err", err)
				}
			}
		case <-ctx.Done():
			return nil
		}
	}
}

// intakeShards is how many alerts are handled at once. Deliveries of one
// fingerprint always go to the same shard, in the order they were
// accepted, so that a resolution never overtakes the firing it resolves;
// different alerts of a storm are handled side by side, each mostly
// waiting for the store.
const intakeShards = 8

// intakeShard handles the alerts whose fingerprints hash to it, in order.
type intakeShard struct {
	mu   sync.Mutex
	evs  []alertEvent
	wake chan struct{}
}

func (s *intakeShard) push(ev alertEvent) {
	s.mu.Lock()
	s.evs = append(s.evs, ev)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *intakeShard) take() []alertEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	evs := s.evs
	s.evs = nil
	return evs
}

func shardOf(fingerprint string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(fingerprint))
	return int(h.Sum32() % intakeShards)
}

// runShard handles a shard's alerts until ctx ends; what it has not
// handled then is in the store, and the next start picks it up.
func (a *Receiver) runShard(ctx context.Context, s *intakeShard) {
	for {
		for _, ev := range s.take() {
			if ctx.Err() != nil {
				return
			}
			a.process(ctx, ev)
			a.done()
		}
		select {
		case <-s.wake:
		case <-ctx.Done():
			return
		}
	}
}

func (a *Receiver) heartbeat() {
	if a.beat != nil {
		a.beat.Beat(Heartbeat)
	}
}

func (a *Receiver) process(ctx context.Context, ev alertEvent) {
	defer func() {
		// A bug in one alert's handling must not stop the intake.
		if r := recover(); r != nil {
			a.log.Error("alert handling panicked", "fingerprint", ev.alert.Fingerprint, "panic", r)
			if ev.reserved {
				a.queue.release()
			}
		}
	}()
	if ev.route == nil {
		a.log.Info("alert matches no route; recorded only", "alert", ev.alert.Name(), "fingerprint", ev.alert.Fingerprint, "status", ev.alert.Status)
		return
	}
	switch {
	case ev.alert.Status == store.AlertResolved:
		a.resolve(ctx, ev)
	case ev.state.Fresh:
		a.trigger(ctx, ev)
	default:
		a.repeat(ctx, ev)
	}
}

// trigger starts what a new firing alert asks for: its message, and its
// run in the message's thread.
func (a *Receiver) trigger(ctx context.Context, ev alertEvent) {
	fp := ev.alert.Fingerprint
	log := a.log.With("alert", ev.alert.Name(), "fingerprint", fp)
	a.mu.Lock()
	prev := a.tracks[fp]
	a.mu.Unlock()
	if prev != nil && !prev.resolved && prev.workID != "" && a.queue.unfinished(prev.workID) {
		// The dedup window passed while the run it started is still
		// queued or running: one alert never runs twice at once.
		if ev.reserved {
			a.queue.release()
		}
		a.metrics.deduped.Inc()
		log.Info("alert fires again while its run is not finished; not started again", "work", prev.workID)
		a.seenAgain(prev, ev)
		return
	}
	t := &alertTrack{
		alert: ev.alert, route: ev.route, key: ev.state.TriggerKey, triggeredAt: ev.state.TriggeredAt,
		seen: ev.state.Repeats + 1, lastAt: ev.state.LastSeen, channel: a.channel(), labels: ev.alert.Labels,
	}
	a.mu.Lock()
	a.tracks[fp] = t
	a.mu.Unlock()

	g := a.groupFor(ev)
	if problem := a.check(ctx, ev.route); problem != "" {
		if ev.reserved {
			a.queue.release()
		}
		a.metrics.invalid.Inc()
		log.Warn("alert not run", "runbook", ev.route.Runbook, "problem", problem)
		a.mu.Lock()
		t.problem = problem
		a.mu.Unlock()
		if g != nil {
			if _, err := a.join(ctx, g, t); err == nil {
				return
			}
			// The summary could not be recorded: the alert's own message
			// says why it was not run.
		}
		a.postAlert(ctx, t)
		return
	}
	thread, quiet := "", false
	if g != nil {
		if ref, err := a.join(ctx, g, t); err == nil {
			thread, quiet = ref.ID, true
		}
	}
	if thread == "" {
		a.postAlert(ctx, t)
		thread = t.ts
	}
	sctx, cancel := context.WithTimeout(ctx, storeTimeout)
	acc, err := a.disp.Enqueue(sctx, dispatch.Request{
		Key: t.key, Runbook: ev.route.Runbook, Params: ev.route.Params, RequestedBy: ev.alert.Source,
		Source: store.TriggerAlert, Channel: t.channel, Thread: thread, Payload: ev.raw, Quiet: quiet,
	})
	cancel()
	switch {
	case acc.WorkID != "":
		a.mu.Lock()
		t.workID = acc.WorkID
		a.byWork[acc.WorkID] = t
		a.mu.Unlock()
		if ev.reserved {
			a.queue.queued(acc.WorkID)
		} else {
			a.queue.adopt(acc.WorkID)
		}
		if !acc.Duplicate {
			a.metrics.runs.Inc()
		}
		if err != nil {
			log.Warn("alert run queued but not started", "work", acc.WorkID, "err", err)
		}
	default:
		if ev.reserved {
			a.queue.release()
		}
		log.Error("alert run not queued", "runbook", ev.route.Runbook, "err", err)
		a.mu.Lock()
		t.problem = "could not queue the run: " + err.Error() + "; it is tried again shortly"
		t.unqueued, t.thread, t.quiet = true, thread, quiet
		a.mu.Unlock()
	}
	if t.group != nil {
		a.showGroup(t.group)
		return
	}
	a.showAlert(t)
}

// check finds what keeps a routed alert from running: a param template
// that failed, an unknown runbook, or params the runbook refuses (the same
// validation as any other trigger's).
func (a *Receiver) check(ctx context.Context, rt *routed) string {
	if rt.Err != nil {
		return fmt.Sprintf("params of %s from the alert: %v", rt.Runbook, rt.Err)
	}
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	err := a.disp.Check(ctx, rt.Runbook, rt.Params)
	var unknown *dispatch.UnknownRunbookError
	switch {
	case errors.As(err, &unknown):
		return err.Error()
	case err != nil:
		return "invalid params from the alert: " + err.Error()
	}
	return ""
}

// repeat folds a repeated delivery into the alert's message.
func (a *Receiver) repeat(ctx context.Context, ev alertEvent) {
	t := a.track(ctx, ev)
	if t == nil {
		return
	}
	a.seenAgain(t, ev)
}

func (a *Receiver) seenAgain(t *alertTrack, ev alertEvent) {
	a.mu.Lock()
	t.seen++
	if ev.state.LastSeen.After(t.lastAt) {
		t.lastAt = ev.state.LastSeen
	}
	t.alert = ev.alert
	g := t.group
	a.mu.Unlock()
	if g != nil {
		a.showGroup(g)
		return
	}
	a.showAlert(t)
}

// resolve marks the alert's message resolved and says so in its thread.
func (a *Receiver) resolve(ctx context.Context, ev alertEvent) {
	t := a.track(ctx, ev)
	if t == nil || t.resolved {
		return
	}
	at := ev.alert.EndsAt
	if at.IsZero() {
		at = ev.state.LastSeen
	}
	a.mu.Lock()
	t.resolved, t.resolvedAt, t.closedAt = true, at, ev.state.LastSeen
	t.alert = ev.alert
	g := t.group
	resolved := t.resolvedView()
	a.mu.Unlock()
	if g != nil {
		// The group's summary says so; no reply per alert in a storm.
		a.showGroup(g)
		return
	}
	a.showAlert(t)

	channel, thread := t.channel, t.ts
	if thread == "" {
		channel, thread = a.runMessage(ctx, ev.alert.Fingerprint, channel)
	}
	if channel == "" {
		return
	}
	if a.chat == nil {
		a.log.Info("alert resolved", "alert", t.alert.Name(), "fingerprint", t.alert.Fingerprint)
		return
	}
	ctx, cancel := context.WithTimeout(ctx, chatTimeout)
	defer cancel()
	if _, err := a.chat.Post(ctx, channel, thread, resolved); err != nil {
		a.log.Warn("alert resolution not posted", "alert", t.alert.Name(), "fingerprint", t.alert.Fingerprint, "err", err)
	}
}

// track returns the alert's current trigger, rebuilding it from the store
// when this process does not hold it (it started before a restart).
func (a *Receiver) track(ctx context.Context, ev alertEvent) *alertTrack {
	fp := ev.alert.Fingerprint
	a.mu.Lock()
	t := a.tracks[fp]
	a.mu.Unlock()
	if t != nil {
		return t
	}
	if ev.state.TriggerKey == "" {
		return nil
	}
	// A repeat counts itself when the caller adds it; a resolution
	// does not.
	seen := ev.state.Repeats
	if ev.alert.Status == store.AlertResolved {
		seen++
	}
	t = &alertTrack{
		alert: ev.alert, route: ev.route, key: ev.state.TriggerKey, triggeredAt: ev.state.TriggeredAt,
		seen: seen, lastAt: ev.state.LastSeen, channel: a.channel(),
	}
	if ev.state.RunID != "" {
		ctx, cancel := context.WithTimeout(ctx, storeTimeout)
		defer cancel()
		if run, err := a.store.GetRun(ctx, ev.state.RunID); err == nil && run.WorkID != "" {
			a.adoptWork(ctx, t, run.WorkID)
		}
	}
	a.mu.Lock()
	a.tracks[fp] = t
	a.mu.Unlock()
	return t
}

// adoptWork links a track to work queued earlier and to the alert message
// that work's run went under.
func (a *Receiver) adoptWork(ctx context.Context, t *alertTrack, workID string) {
	// The track is found by its work before the work is read: a run that
	// ends from now on tells it (runEnded), and one that ended before is
	// read below as done. Read first, a run that ended in between would
	// tell no one, and its verdict would never show.
	a.mu.Lock()
	t.workID = workID
	a.byWork[workID] = t
	a.mu.Unlock()
	w, err := a.store.GetWork(ctx, workID)
	if err != nil {
		a.mu.Lock()
		t.workID = ""
		delete(a.byWork, workID)
		a.mu.Unlock()
		a.log.Warn("alert's work not found", "work", workID, "err", err)
		return
	}
	if w.State != store.WorkDone {
		a.queue.adopt(w.ID)
	}
	a.adoptVerdict(ctx, t, w)
	channel, thread := dispatch.WorkThread(w)
	if thread == "" {
		return
	}
	if channel != "" {
		t.channel = channel
	}
	if dispatch.WorkQuiet(w) && t.alert.GroupKey != "" {
		// The run went under its group's summary: the summary lists
		// it again, with whatever else of the group this process picks up.
		t.labels = t.alert.Labels
		a.rejoin(t, thread)
		return
	}
	a.mu.Lock()
	t.ts = thread
	if a.chat != nil {
		t.live = a.liveMessage(chat.Ref{Channel: t.channel, ID: t.ts})
	}
	a.mu.Unlock()
}

// adoptVerdict fills in the verdict of an alert whose run ended before
// this process picked it up.
func (a *Receiver) adoptVerdict(ctx context.Context, t *alertTrack, w store.Work) {
	if w.RunID == "" {
		return
	}
	run, err := a.store.GetRun(ctx, w.RunID)
	if err != nil || run.Status == store.RunRunning {
		return
	}
	var rep runbooks.Report
	verdict := string(run.Status)
	if len(run.Report) > 0 && json.Unmarshal(run.Report, &rep) == nil {
		verdict = runview.Verdict(&rep)
	}
	a.mu.Lock()
	t.runID, t.verdict, t.verdictStatus = run.ID, verdict, runview.OutcomeStatus(run.Outcome)
	a.mu.Unlock()
}

// rejoin puts a recovered alert back in its group's summary, whose
// message is ref.
func (a *Receiver) rejoin(t *alertTrack, ref string) {
	key := t.channel + " " + t.alert.GroupKey
	a.mu.Lock()
	g := a.groups[key]
	if g == nil {
		g = &alertGroup{key: t.alert.GroupKey, channel: t.channel, common: map[string]string{}, ref: chat.Ref{Channel: t.channel, ID: ref}}
		if a.chat != nil {
			g.live = a.liveMessage(g.ref)
		}
		a.groups[key] = g
	}
	if len(g.members) == 0 {
		g.common = maps.Clone(t.alert.Labels)
	} else {
		for k, v := range g.common {
			if t.alert.Labels[k] != v {
				delete(g.common, k)
			}
		}
	}
	t.group = g
	g.members = append(g.members, t)
	a.mu.Unlock()
	a.showGroup(g)
}

// runMessage finds the message of the alert's run, for an alert whose own
// message could not be posted.
func (a *Receiver) runMessage(ctx context.Context, fp, channel string) (string, string) {
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	st, err := a.store.GetAlert(ctx, fp)
	if err != nil || st.RunID == "" {
		return channel, ""
	}
	run, err := a.store.GetRun(ctx, st.RunID)
	if err != nil || run.Message == nil {
		return channel, ""
	}
	return run.Message.Channel, run.Message.ID
}

// postAlert posts the alert's message; a run queued after it goes in its
// thread. When the chat fails, the run goes on and posts on its own.
func (a *Receiver) postAlert(ctx context.Context, t *alertTrack) {
	if a.chat == nil {
		a.log.Info("alert firing; no chat configured, its run is recorded and logged", "alert", t.alert.Name(), "runbook", t.route.Runbook)
		return
	}
	if t.channel == "" {
		a.log.Warn("no channel for alert messages (configure the alerts or the bot channel)", "alert", t.alert.Name())
		return
	}
	a.mu.Lock()
	down := a.now().Before(a.chatDown)
	a.mu.Unlock()
	if down {
		// The chat failed a moment ago: do not make every alert of a storm
		// wait for it before its run is queued.
		a.log.Warn("alert message skipped while the chat fails; its run posts on its own", "alert", t.alert.Name())
		return
	}
	ctx, cancel := context.WithTimeout(ctx, chatTimeout)
	defer cancel()
	a.mu.Lock()
	view := t.view()
	a.mu.Unlock()
	ref, err := a.chat.Post(ctx, t.channel, "", view)
	if err != nil {
		a.mu.Lock()
		a.chatDown = a.now().Add(chatBackoff)
		a.mu.Unlock()
		a.log.Warn("alert message not posted; its run posts on its own", "alert", t.alert.Name(), "err", err)
		return
	}
	a.mu.Lock()
	t.ts = ref.ID
	t.live = a.liveMessage(ref)
	a.mu.Unlock()
}

// showAlert brings the alert's message up to date. Updates are coalesced:
// a storm of repeats becomes one chat.update per update interval.
func (a *Receiver) showAlert(t *alertTrack) {
	a.mu.Lock()
	live := t.live
	var view chat.Message
	if live != nil {
		view = t.view()
	}
	a.mu.Unlock()
	if live != nil {
		live.Set(view)
	}
}

// Orphaned alerts: a replica that records an alert (and so acknowledges
// it) and dies before its intake loop queues the run leaves an alert
// nobody runs, since the other replicas fold its later deliveries into
// the trigger it already has. Every orphanCheckEvery, each replica queues
// the runs of alerts triggered at least orphanGrace ago that have none;
// the trigger key makes that idempotent across replicas.
const (
	orphanCheckEvery = 30 * time.Second
	// orphanGrace leaves the replica that accepted an alert the time to
	// queue its run itself: it does so within milliseconds.
	orphanGrace = 30 * time.Second
)

// recover queues the runs of alerts that were accepted (recorded, and so
// acknowledged) before a restart but whose run was never queued, and picks
// up the messages of those that were.
func (a *Receiver) recover(ctx context.Context) error {
	return a.recoverAccepted(ctx, false)
}

// recoverOrphans queues the runs of alerts another process accepted and
// never queued; alerts whose run exists are left to whoever queued it.
func (a *Receiver) recoverOrphans(ctx context.Context) error {
	return a.recoverAccepted(ctx, true)
}

func (a *Receiver) recoverAccepted(ctx context.Context, orphansOnly bool) error {
	ctx, cancel := context.WithTimeoutCause(ctx, time.Minute, errors.New("checking accepted alerts took too long"))
	defer cancel()
	now := a.now()
	states, err := a.store.RecentAlerts(ctx, now.Add(-a.cfg.DedupWindow))
	if err != nil {
		return err
	}
	var errs []error
	for _, st := range states {
		if st.Status != store.AlertFiring || st.TriggerKey == "" {
			continue
		}
		if orphansOnly && (st.RunID != "" || now.Sub(st.TriggeredAt) < orphanGrace) {
			// A trigger with a run had its work queued.
			continue
		}
		// An alert this process tracks is handled here, unless its run
		// was never queued: queueing failed (the store lost its primary
		// mid-storm, say) and nothing else would ever queue it.
		a.mu.Lock()
		t, held := a.tracks[st.Fingerprint]
		handled := held && (t.workID != "" || (t.problem != "" && !t.unqueued) || t.resolved)
		a.mu.Unlock()
		if handled {
			continue
		}
		if err := a.recoverOne(ctx, st, orphansOnly); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (a *Receiver) recoverOne(ctx context.Context, st store.AlertState, orphansOnly bool) error {
	deliveries, err := a.store.AlertDeliveries(ctx, st.Fingerprint)
	if err != nil || len(deliveries) == 0 {
		return err
	}
	var al Alert
	last := deliveries[len(deliveries)-1]
	if err := json.Unmarshal(last.Payload, &al); err != nil {
		return fmt.Errorf("read delivery %d of alert %s: %w", last.ID, st.Fingerprint, err)
	}
	rt := routeAlert(a.routes.Load().routes, al)
	if rt == nil || rt.Err != nil {
		return nil
	}
	t := &alertTrack{
		alert: al, route: rt, key: st.TriggerKey, triggeredAt: st.TriggeredAt,
		seen: st.Repeats + 1, lastAt: st.LastSeen, channel: a.channel(),
	}
	a.mu.Lock()
	if held := a.tracks[st.Fingerprint]; held != nil && held.unqueued {
		// This process accepted it and failed to queue its run: the run
		// goes to the alert's own message (or its group's summary).
		t = held
		t.problem, t.unqueued = "", false
	}
	a.mu.Unlock()
	// Queueing under the trigger's key again is idempotent: work that
	// exists is found, work that was lost is queued now (its run posts on
	// its own, since the alert's message may never have been posted).
	acc, err := a.disp.Submit(ctx, dispatch.Request{
		Key: st.TriggerKey, Runbook: rt.Runbook, Params: rt.Params, RequestedBy: al.Source,
		Source: store.TriggerAlert, Channel: t.channel, Thread: t.thread, Quiet: t.quiet, Payload: last.Payload,
	})
	if acc.WorkID == "" {
		a.log.Info("alert accepted before the restart is not runnable", "alert", al.Name(), "fingerprint", st.Fingerprint, "err", err)
		return nil
	}
	if orphansOnly && acc.Duplicate {
		// Its run was queued; the process that queued it keeps its
		// message.
		return nil
	}
	if !acc.Duplicate {
		a.log.Warn("alert accepted before the restart had no run queued; queued it now", "alert", al.Name(), "fingerprint", st.Fingerprint, "work", acc.WorkID)
		a.metrics.runs.Inc()
	}
	a.adoptWork(ctx, t, acc.WorkID)
	a.mu.Lock()
	a.tracks[st.Fingerprint] = t
	a.mu.Unlock()
	return nil
}

// housekeep refreshes the queue depth and forgets alerts whose trigger is
// over: resolved, or past the dedup window with their run done.
func (a *Receiver) housekeep(ctx context.Context) {
	now := a.now()
	if a.queue.depth() > 0 {
		ctx, cancel := context.WithTimeout(ctx, storeTimeout)
		err := a.queue.refresh(ctx, a.store, now, 0)
		cancel()
		if err != nil {
			a.log.Warn("alert queue not refreshed", "err", err)
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for fp, t := range a.tracks {
		over := t.resolved && now.Sub(t.closedAt) > a.cfg.DedupWindow
		stale := now.Sub(t.lastAt) > 2*a.cfg.DedupWindow && (t.workID == "" || !a.queue.unfinished(t.workID))
		if over || stale {
			delete(a.tracks, fp)
			delete(a.byWork, t.workID)
		}
	}
	// A group is forgotten with the last of its alerts: a later
	// notification with its key starts a new summary.
	for key, g := range a.groups {
		current := false
		for _, t := range g.members {
			if a.tracks[t.alert.Fingerprint] == t {
				current = true
				break
			}
		}
		if !current {
			delete(a.groups, key)
		}
	}
}
