// Package outbox puts a durable, ordered queue between runbot and its chat
// platform. Outbox is a chat.Chat: Post and Update record the message in
// the store and return at once, so that a run or an alert never waits for
// the chat; Run delivers what is recorded at the platform's pace, retries
// rate limits, server errors and network failures until the platform takes
// the message, and picks up after a restart (or another replica's death)
// what was not delivered. An update only ever sends the newest content, so
// a storm of updates to one message costs one call.
package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/runbot/runbot/chat"
	"github.com/runbot/runbot/store"
)

// Config sets the outbox's pace; zero values are the defaults.
type Config struct {
	// Platform names the platform in the references Post returns.
	Platform string
	// PostGap is the least time between two posts to one channel: Slack
	// allows about one chat.postMessage per second per channel.
	PostGap time.Duration
	// UpdateGap is the least time between two updates, whatever the
	// message: chat.update is a Tier 3 method, about 50 calls a minute
	// for the whole workspace.
	UpdateGap time.Duration
	// MaxAge is how long a message is tried before it is given up as
	// obsolete (a day: past that, nobody reads it as news).
	MaxAge time.Duration
	// Poll is how often the store is asked for messages other processes
	// queued (this process's own wake the sender at once).
	Poll time.Duration
}

const (
	defaultPostGap   = time.Second
	defaultUpdateGap = 1200 * time.Millisecond
	defaultMaxAge    = 24 * time.Hour
	defaultPoll      = time.Second
	// claimLease is how long a claimed message is this process's to
	// deliver; a process that dies leaves it to another after that.
	claimLease = 5 * time.Minute
	// inflightLimit bounds the messages claimed and not yet delivered, so
	// that none waits for its turn long enough to outlive its claim.
	inflightLimit = 64
	// callTimeout bounds one call to the platform.
	callTimeout = 30 * time.Second
	// storeTimeout bounds one write of the outbox's state.
	storeTimeout = 10 * time.Second
	// maxBackoff caps the wait after a failed call.
	maxBackoff = 2 * time.Minute
	// threadWait is how soon a reply whose thread is not posted yet is
	// looked at again.
	threadWait = 500 * time.Millisecond
)

func (c Config) withDefaults() Config {
	if c.PostGap <= 0 {
		c.PostGap = defaultPostGap
	}
	if c.UpdateGap <= 0 {
		c.UpdateGap = defaultUpdateGap
	}
	if c.MaxAge <= 0 {
		c.MaxAge = defaultMaxAge
	}
	if c.Poll <= 0 {
		c.Poll = defaultPoll
	}
	return c
}

// Outbox is a chat.Chat whose posts and updates are recorded first and
// delivered by Run. It also passes private replies and user group lookups
// through to the platform, which are answers to a person now, not
// messages to keep.
type Outbox struct {
	next    chat.Chat
	st      store.ChatOutbox
	cfg     Config
	log     *slog.Logger
	now     func() time.Time
	metrics *metrics
	wake    chan struct{}

	mu sync.Mutex
	// inflight counts claimed messages handed to a sender lane.
	inflight int
	// lanes deliver in order: one per channel for posts, one for all
	// updates.
	lanes map[string]*lane
}

var (
	_ chat.Chat       = (*Outbox)(nil)
	_ chat.Replier    = (*Outbox)(nil)
	_ chat.UserGroups = (*Outbox)(nil)

	_ chat.Queue = (*Outbox)(nil)
)

// New returns an outbox that delivers to next. Logger is slog.Default()
// and now time.Now when nil.
func New(next chat.Chat, st store.ChatOutbox, cfg Config, log *slog.Logger, now func() time.Time) *Outbox {
	if log == nil {
		log = slog.Default()
	}
	if now == nil {
		now = time.Now
	}
	return &Outbox{
		next: next, st: st, cfg: cfg.withDefaults(), log: log.With("component", "chat outbox"), now: now,
		metrics: newMetrics(), wake: make(chan struct{}, 1), lanes: map[string]*lane{},
	}
}

// Post implements chat.Chat: the message is recorded and its reference,
// the outbox's id of it, returned at once. Replies and updates may use
// the reference before the platform has the message: they are delivered
// after it.
func (o *Outbox) Post(ctx context.Context, channel, thread string, m chat.Message) (chat.Ref, error) {
	ref, _, err := o.queue(ctx, store.ChatMessage{Channel: channel, Thread: thread}, m, nil)
	return ref, err
}

// Enqueue implements chat.Queue.
func (o *Outbox) Enqueue(ctx context.Context, key, channel, thread string, m chat.Message, r *chat.Refusal) (chat.Ref, error) {
	ref, _, err := o.queue(ctx, store.ChatMessage{Key: key, Channel: channel, Thread: thread}, m, r)
	return ref, err
}

// PostOnce is Post with a key: of all posts with one key, only the first
// is a message, and later ones return its reference with created false
// (an alert group's one summary, whichever process sees the group first).
func (o *Outbox) PostOnce(ctx context.Context, key, channel, thread string, m chat.Message) (chat.Ref, bool, error) {
	return o.queue(ctx, store.ChatMessage{Key: key, Channel: channel, Thread: thread}, m, nil)
}

func (o *Outbox) queue(ctx context.Context, row store.ChatMessage, m chat.Message, r *chat.Refusal) (chat.Ref, bool, error) {
	channel := row.Channel
	var err error
	if row.Content, err = json.Marshal(m); err != nil {
		return chat.Ref{}, false, fmt.Errorf("queue chat message: encode: %w", err)
	}
	if r != nil {
		if row.OnRefusal, err = json.Marshal(r); err != nil {
			return chat.Ref{}, false, fmt.Errorf("queue chat message: encode: %w", err)
		}
	}
	msg, created, err := o.st.QueueChatMessage(ctx, row)
	if err != nil {
		return chat.Ref{}, false, err
	}
	if created {
		o.metrics.queued.WithLabelValues("post").Inc()
		o.kick()
	}
	return chat.Ref{Platform: o.cfg.Platform, Channel: channel, ID: msg.ID}, created, nil
}

// Update implements chat.Chat: the message's newest content is recorded
// and delivered after whatever the platform was given before. A message
// posted before the outbox existed (its reference holds the platform's
// id) is updated directly.
func (o *Outbox) Update(ctx context.Context, ref chat.Ref, m chat.Message) error {
	if !strings.HasPrefix(ref.ID, store.ChatMessagePrefix) {
		return o.next.Update(ctx, ref, m)
	}
	content, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("update chat message %s: encode: %w", ref.ID, err)
	}
	if _, err := o.st.SetChatMessageContent(ctx, ref.ID, content); err != nil {
		return err
	}
	o.metrics.queued.WithLabelValues("update").Inc()
	o.kick()
	return nil
}

// Upload implements chat.Chat. A file is not kept: it is uploaded now, into
// the thread once the thread's first message is posted, and the caller's
// context bounds how long that may take.
func (o *Outbox) Upload(ctx context.Context, channel, thread string, f chat.File) error {
	ts, err := o.platformID(ctx, thread)
	if err != nil {
		return fmt.Errorf("upload %s: %w", f.Name, err)
	}
	return o.next.Upload(ctx, channel, ts, f)
}

// Reply implements chat.Replier by passing the reply on.
func (o *Outbox) Reply(ctx context.Context, to chat.Recipient, m chat.Message) error {
	r, ok := o.next.(chat.Replier)
	if !ok {
		return errors.New("reply: the chat platform cannot reply privately")
	}
	return r.Reply(ctx, to, m)
}

// UserGroupMembers implements chat.UserGroups by passing the lookup on.
func (o *Outbox) UserGroupMembers(ctx context.Context, id string) ([]string, error) {
	g, ok := o.next.(chat.UserGroups)
	if !ok {
		return nil, errors.New("user groups: the chat platform has none")
	}
	return g.UserGroupMembers(ctx, id)
}

// platformID returns the platform's id of a posted message, waiting until
// it is posted; an id that is not the outbox's is the platform's already.
func (o *Outbox) platformID(ctx context.Context, id string) (string, error) {
	if !strings.HasPrefix(id, store.ChatMessagePrefix) {
		return id, nil
	}
	for {
		m, err := o.st.GetChatMessage(ctx, id)
		switch {
		case err != nil:
			return "", err
		case m.Posted():
			return m.PlatformID, nil
		case m.State == store.ChatMessageFailed:
			return "", fmt.Errorf("message %s was never posted: %s", id, m.LastError)
		}
		t := time.NewTimer(threadWait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return "", fmt.Errorf("waiting for message %s to be posted: %w", id, context.Cause(ctx))
		}
	}
}

func (o *Outbox) kick() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// Backlog is how many messages wait for delivery, and since when the
// oldest does.
func (o *Outbox) Backlog(ctx context.Context) (store.ChatBacklog, error) {
	return o.st.ChatBacklog(ctx)
}

// Drain waits until nothing waits for delivery, or ctx ends: a clean
// shutdown gives the sender its grace period to deliver the last messages
// (what it does not deliver waits in the store for the next start).
func (o *Outbox) Drain(ctx context.Context) error {
	for {
		b, err := o.st.ChatBacklog(ctx)
		if err == nil && b.Due == 0 {
			return nil
		}
		t := time.NewTimer(threadWait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			if err != nil {
				return fmt.Errorf("drain chat messages: %w", err)
			}
			return fmt.Errorf("drain chat messages: %d not delivered: %w", b.Due, context.Cause(ctx))
		}
	}
}
