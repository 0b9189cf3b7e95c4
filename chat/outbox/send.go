package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/runbot/runbot/chat"
	"github.com/runbot/runbot/store"
)

// lane delivers claimed messages one after another at one pace: the posts
// to one channel (in the order they were queued), or every update.
type lane struct {
	name string
	gap  time.Duration

	mu    sync.Mutex
	queue []claimed
	ready chan struct{}
	// next is the earliest time the next call may be made.
	next time.Time
	// parkedUntil is when the messages the lane gave back to the store
	// (see deliver) are due again: a message claimed for the lane before
	// then goes back with them rather than ahead of them.
	parkedUntil time.Time
}

// claimed is a message this process holds the claim of, since at.
type claimed struct {
	m  store.ChatMessage
	at time.Time
}

// push queues c, unless the lane is parked at now, the time before c was
// claimed: then c is not queued and push returns when it is due again.
func (l *lane) push(c claimed, now time.Time) (until time.Time, parked bool) {
	l.mu.Lock()
	if now.Before(l.parkedUntil) {
		until = l.parkedUntil
		l.mu.Unlock()
		return until, true
	}
	l.queue = append(l.queue, c)
	l.mu.Unlock()
	select {
	case l.ready <- struct{}{}:
	default:
	}
	return time.Time{}, false
}

func (l *lane) pop() (claimed, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.queue) == 0 {
		return claimed{}, false
	}
	c := l.queue[0]
	l.queue = l.queue[1:]
	return c, true
}

// drain empties the lane's queue.
func (l *lane) drain() []claimed {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.queue
	l.queue = nil
	return out
}

// park empties the lane's queue, as drain, and keeps what is claimed for
// the lane before until out of it (see push).
func (l *lane) park(until time.Time) []claimed {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.queue
	l.queue = nil
	l.parkedUntil = until
	return out
}

// Run delivers recorded messages until ctx ends: it claims due messages
// (its own process's at once, other processes' within Config.Poll) and
// hands each to its lane. When it returns, the messages it claimed and did
// not deliver are released for the next start or another replica.
func (o *Outbox) Run(ctx context.Context) error {
	tick := time.NewTicker(o.cfg.Poll)
	defer tick.Stop()
	var wg sync.WaitGroup
	defer func() {
		wg.Wait()
		o.releaseAll()
	}()
	for {
		o.claim(ctx, &wg)
		select {
		case <-ctx.Done():
			return nil
		case <-o.wake:
		case <-tick.C:
		}
	}
}

func (o *Outbox) claim(ctx context.Context, wg *sync.WaitGroup) {
	o.mu.Lock()
	room := inflightLimit - o.inflight
	o.mu.Unlock()
	if room <= 0 {
		return
	}
	// The time is read before the claim: a lane parked at that time was
	// parked for the whole claim, so the messages the store returned for
	// it were queued after the ones it gave back and must wait for them.
	before := o.now()
	cctx, cancel := context.WithTimeoutCause(ctx, storeTimeout, errors.New("claiming chat messages took too long"))
	msgs, err := o.st.ClaimChatMessages(cctx, room, claimLease)
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			o.log.Warn("chat messages not claimed; trying again", "err", err)
		}
		return
	}
	at := o.now()
	for _, m := range msgs {
		name, gap := "update", o.cfg.UpdateGap
		if !m.Posted() {
			name, gap = "post "+m.Channel, o.cfg.PostGap
		}
		o.mu.Lock()
		o.inflight++
		l := o.lanes[name]
		if l == nil {
			l = &lane{name: name, gap: gap, ready: make(chan struct{}, 1)}
			o.lanes[name] = l
			wg.Add(1)
			go func() {
				defer wg.Done()
				o.runLane(ctx, l)
			}()
		}
		o.mu.Unlock()
		if until, parked := l.push(claimed{m: m, at: at}, before); parked {
			// The lane gave the messages before this one back to the
			// store, due at until: this one goes back with them, so that
			// it is claimed again after them, not delivered ahead of
			// them.
			o.release(claimed{m: m, at: at}, until, "", false)
			o.mu.Lock()
			o.inflight--
			o.mu.Unlock()
		}
	}
}

func (o *Outbox) runLane(ctx context.Context, l *lane) {
	for {
		c, ok := l.pop()
		if !ok {
			select {
			case <-l.ready:
				continue
			case <-ctx.Done():
				return
			}
		}
		o.deliver(ctx, l, c)
		o.mu.Lock()
		o.inflight--
		o.mu.Unlock()
		if ctx.Err() != nil {
			return
		}
	}
}

// deliver makes the calls one message needs, waiting out the lane's pace,
// rate limits and failures, until the platform takes it, refuses it for
// good, or the claim has been held for half its lease: then the message
// and everything queued behind it in the lane go back to the store
// together, due at the same time, so that they are claimed again in order.
func (o *Outbox) deliver(ctx context.Context, l *lane, c claimed) {
	m := c.m
	log := o.log.With("message", m.ID, "channel", m.Channel)
	for attempt := 0; ; attempt++ {
		if !sleepUntil(ctx, l.next) {
			o.release(c, o.now(), "", false)
			return
		}
		// Every call re-reads what it sends: content set since the claim
		// replaces what was claimed, and a message claimed again after
		// its post was recorded late (see delivered) is updated, not
		// posted a second time.
		// Under its own deadline: a store whose server went silent (its
		// machine lost power) would hold the lane, and every message
		// claimed behind it, until the kernel gave the connection up.
		rctx, cancel := context.WithTimeoutCause(ctx, storeTimeout, errors.New("reading a chat message took too long"))
		fresh, err := o.st.GetChatMessage(rctx, m.ID)
		cancel()
		if err == nil {
			m = fresh
		}
		if age := o.now().Sub(m.CreatedAt); age > o.cfg.MaxAge {
			log.Error("chat message given up: not delivered within its time", "age", age.Round(time.Second), "last_error", m.LastError)
			o.settle(ctx, store.ChatDeferral{ID: m.ID, Until: o.now(), GiveUp: true, Reason: "obsolete: not delivered within " + o.cfg.MaxAge.String()})
			o.metrics.givenUp.Inc()
			return
		}
		var msg chat.Message
		if err := json.Unmarshal(m.Content, &msg); err != nil {
			log.Error("chat message given up: its content cannot be read", "err", err)
			o.settle(ctx, store.ChatDeferral{ID: m.ID, Until: o.now(), GiveUp: true, Reason: "content unreadable: " + err.Error()})
			o.metrics.givenUp.Inc()
			return
		}
		platformID, err := o.call(ctx, m, msg)
		l.next = o.now().Add(l.gap)
		if errors.Is(err, errThreadNotPosted) {
			// Not a failure: the reply goes after its thread's first
			// message, which another lane or process posts.
			o.release(c, o.now().Add(threadWait), "", false)
			return
		}
		if err == nil {
			o.delivered(ctx, m, platformID)
			return
		}
		if ctx.Err() != nil {
			o.release(c, o.now(), err.Error(), true)
			return
		}
		if chat.Rejected(err) {
			log.Error("chat message refused by the platform; given up", "err", err)
			o.settle(ctx, store.ChatDeferral{ID: m.ID, Until: o.now(), GiveUp: true, Reason: err.Error()})
			o.metrics.givenUp.Inc()
			o.tellRefusal(ctx, m, err)
			return
		}
		wait := backoff(attempt + m.Attempts)
		reason := "failed"
		if ra, limited := chat.RetryAfter(err); limited {
			wait, reason = max(ra, l.gap, time.Second), "rate_limited"
		}
		o.metrics.retried.WithLabelValues(reason).Inc()
		l.next = o.now().Add(wait)
		log.Warn("chat message not delivered; will try again", "err", err, "retry_in", wait, "attempt", attempt+1)
		if o.now().Sub(c.at) > claimLease/2 {
			// Give the claim back before it runs out: with the rest of
			// the lane, and with what is claimed for the lane until
			// then, so that the order holds when it is claimed again.
			until := l.next
			rest := l.park(until)
			o.release(c, until, err.Error(), true)
			for _, q := range rest {
				o.release(q, until, "", false)
				o.mu.Lock()
				o.inflight--
				o.mu.Unlock()
			}
			return
		}
	}
}

// errThreadNotPosted is a reply whose thread's first message the platform
// does not have yet.
var errThreadNotPosted = errors.New("the thread's first message is not posted yet")

// call makes the one call m needs now: its post, or its newest update. It
// returns the platform's id of a message it posted.
func (o *Outbox) call(ctx context.Context, m store.ChatMessage, msg chat.Message) (string, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, callTimeout, fmt.Errorf("the chat platform did not answer within %s", callTimeout))
	defer cancel()
	if m.Posted() {
		o.metrics.calls.WithLabelValues("update").Inc()
		return "", o.next.Update(ctx, chat.Ref{Platform: o.cfg.Platform, Channel: m.Channel, ID: m.PlatformID}, msg)
	}
	thread := m.Thread
	if strings.HasPrefix(thread, store.ChatMessagePrefix) {
		parent, err := o.st.GetChatMessage(ctx, thread)
		switch {
		case err != nil:
			return "", fmt.Errorf("find the thread of message %s: %w", m.ID, err)
		case parent.Posted():
			thread = parent.PlatformID
		case parent.State == store.ChatMessageFailed:
			// Its thread will never exist: better in the channel than
			// nowhere.
			o.log.Warn("the thread of a reply was never posted; posting the reply in the channel", "message", m.ID, "thread", parent.ID)
			thread = ""
		default:
			return "", errThreadNotPosted
		}
	}
	o.metrics.calls.WithLabelValues("post").Inc()
	ref, err := o.next.Post(ctx, m.Channel, thread, msg)
	if err != nil {
		return "", err
	}
	return ref.ID, nil
}

func (o *Outbox) delivered(ctx context.Context, m store.ChatMessage, platformID string) {
	kind := "update"
	if !m.Posted() {
		kind = "post"
		o.metrics.latency.Observe(o.now().Sub(m.CreatedAt).Seconds())
	}
	o.metrics.delivered.WithLabelValues(kind).Inc()
	for attempt := 0; ; attempt++ {
		sctx, cancel := context.WithTimeoutCause(context.WithoutCancel(ctx), storeTimeout, errors.New("recording a chat delivery took too long"))
		got, err := o.st.ChatMessageDelivered(sctx, store.ChatDelivery{ID: m.ID, Version: m.Version, PlatformID: platformID})
		cancel()
		if err == nil {
			if got.State == store.ChatMessageDue {
				// Newer content arrived while this was sent.
				o.kick()
			}
			return
		}
		if m.Posted() || ctx.Err() != nil {
			// An update not recorded is sent again when the claim runs
			// out: the newest content twice, which is harmless. A post
			// not recorded when runbot stops is posted again after the
			// restart: a duplicate is the price of never losing one.
			o.log.Error("chat delivery not recorded", "message", m.ID, "err", err)
			return
		}
		// The platform has the post, the store does not know it (it is
		// full, read-only or down). Sent again, it would show twice:
		// its record is tried until the store takes it, holding the
		// lane, whose next posts could not be recorded either.
		if attempt == 0 {
			o.log.Warn("chat post not recorded; trying again until the store takes it, so that it is not posted twice", "message", m.ID, "err", err)
		}
		if !sleepUntil(ctx, o.now().Add(backoff(attempt))) {
			o.log.Error("chat delivery not recorded", "message", m.ID, "err", err)
			return
		}
	}
}

// tellRefusal tells the person a refused post names that it was refused.
func (o *Outbox) tellRefusal(ctx context.Context, m store.ChatMessage, refused error) {
	if len(m.OnRefusal) == 0 || m.Posted() {
		return
	}
	var r chat.Refusal
	if err := json.Unmarshal(m.OnRefusal, &r); err != nil {
		o.log.Warn("refusal not told: unreadable", "message", m.ID, "err", err)
		return
	}
	r.Message.Notes = append(r.Message.Notes, "The chat said: "+refused.Error())
	ctx, cancel := context.WithTimeoutCause(context.WithoutCancel(ctx), callTimeout, errors.New("telling of a refused message took too long"))
	defer cancel()
	if err := o.Reply(ctx, r.To, r.Message); err != nil {
		o.log.Warn("refusal not told", "message", m.ID, "err", err)
	}
}

// settle records a deferral or a giving up under its own deadline.
func (o *Outbox) settle(ctx context.Context, d store.ChatDeferral) {
	sctx, cancel := context.WithTimeoutCause(context.WithoutCancel(ctx), storeTimeout, errors.New("recording a chat delivery attempt took too long"))
	defer cancel()
	if _, err := o.st.ChatMessageDeferred(sctx, d); err != nil {
		o.log.Error("chat delivery attempt not recorded", "message", d.ID, "err", err)
	}
}

// release gives a claimed message back, due at until.
func (o *Outbox) release(c claimed, until time.Time, reason string, failed bool) {
	o.settle(context.Background(), store.ChatDeferral{ID: c.m.ID, Until: until, Failed: failed, Reason: reason})
}

// releaseAll gives back what the lanes still hold when Run stops.
func (o *Outbox) releaseAll() {
	o.mu.Lock()
	lanes := make([]*lane, 0, len(o.lanes))
	for _, l := range o.lanes {
		lanes = append(lanes, l)
	}
	o.lanes = map[string]*lane{}
	o.mu.Unlock()
	for _, l := range lanes {
		for _, c := range l.drain() {
			o.release(c, o.now(), "", false)
			o.mu.Lock()
			o.inflight--
			o.mu.Unlock()
		}
	}
}

// backoff is the wait after the n-th failed call in a row: 1 s doubling to
// maxBackoff.
func backoff(n int) time.Duration {
	if n > 7 {
		return maxBackoff
	}
	return min(time.Second<<n, maxBackoff)
}

// sleepUntil waits until t; false when ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}
