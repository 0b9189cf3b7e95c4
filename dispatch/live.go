package dispatch

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/runbot/runbot/chat"
)

// Live keeps one posted chat message up to date. Callers set the
// newest content as often as they like; a sender sends the newest content
// at most once per gap (Slack allows about one chat.update per second per
// message), so intermediate states coalesce. When Slack answers 429, the
// sender waits the Retry-After it was given and then sends whatever is
// newest by then; when an update fails (the outbox's store cannot write,
// the platform is down), it backs off and sends the newest content again,
// so nothing is lost: the last state always arrives unless the platform
// refuses the message for good or runbot shuts down first.
type Live struct {
	chat chat.Chat
	goFn GoFunc
	log  *slog.Logger
	ref  chat.Ref
	gap  time.Duration

	mu      sync.Mutex
	pending *chat.Message
	sending bool
	// next is the earliest time the next update may be sent.
	next time.Time
	// done is closed when the current sender exits.
	done chan struct{}
	// failures counts the updates that failed in a row, for the backoff.
	failures int
}

// liveSendTimeout bounds one sender's life; it exits when idle anyway. It
// is long because a sender with content to deliver keeps trying through
// an outage of the store or the platform: a run's verdict must reach its
// message.
const liveSendTimeout = 24 * time.Hour

// liveCallTimeout bounds one update call.
const liveCallTimeout = time.Minute

// liveMaxBackoff caps the wait between tries after failed updates.
const liveMaxBackoff = 30 * time.Second

// GoFunc runs fn in the background, tracked for shutdown (tasks.Go,
// Dispatcher.Go).
type GoFunc func(name string, timeout time.Duration, fn func(context.Context)) error

// NewLive keeps the message at ref up to date through c, sending from
// background tasks started with goFn, at most once per gap.
func NewLive(c chat.Chat, goFn GoFunc, log *slog.Logger, ref chat.Ref, gap time.Duration) *Live {
	done := make(chan struct{})
	close(done)
	// The message was just posted: the first update waits one gap too.
	return &Live{chat: c, goFn: goFn, log: log, ref: ref, gap: gap, done: done, next: time.Now().Add(gap)}
}

// Set makes m the content to send next, replacing any unsent content.
func (l *Live) Set(m chat.Message) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pending = &m
	if l.sending {
		return
	}
	l.sending = true
	l.done = make(chan struct{})
	if err := l.goFn("chat message update", liveSendTimeout, l.send); err != nil {
		l.sending = false
		close(l.done)
		l.log.Warn("chat message not updated", "channel", l.ref.Channel, "ts", l.ref.ID, "err", err)
	}
}

// Flush waits until the newest content was sent (or given up on).
func (l *Live) Flush(ctx context.Context) error {
	l.mu.Lock()
	done := l.done
	l.mu.Unlock()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (l *Live) send(ctx context.Context) {
	for {
		l.mu.Lock()
		if l.pending == nil || ctx.Err() != nil {
			if l.pending != nil {
				l.log.Warn("chat message left without its newest content: runbot is shutting down", "channel", l.ref.Channel, "ts", l.ref.ID, "err", context.Cause(ctx))
			}
			l.sending = false
			close(l.done)
			l.mu.Unlock()
			return
		}
		wait := time.Until(l.next)
		l.mu.Unlock()
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				continue
			}
		}
		l.mu.Lock()
		m := *l.pending
		l.pending = nil
		l.mu.Unlock()

		callCtx, cancel := context.WithTimeoutCause(ctx, liveCallTimeout, errors.New("a chat message update took too long"))
		err := l.chat.Update(callCtx, l.ref, m)
		cancel()

		l.mu.Lock()
		l.next = time.Now().Add(l.gap)
		retryAfter, limited := chat.RetryAfter(err)
		switch {
		case limited:
			l.next = time.Now().Add(max(retryAfter, l.gap, time.Second))
			if l.pending == nil {
				l.pending = &m
			}
			l.log.Warn("chat rate limit on a message update; will send the newest content after Retry-After",
				"channel", l.ref.Channel, "ts", l.ref.ID, "retry_after", retryAfter)
		case err != nil && chat.Rejected(err):
			l.failures = 0
			l.log.Warn("chat message update refused; not tried again", "channel", l.ref.Channel, "ts", l.ref.ID, "err", err)
		case err != nil:
			// Tried again with the newest content, whatever came since.
			wait := min(time.Second<<min(l.failures, 5), liveMaxBackoff)
			l.failures++
			l.next = time.Now().Add(max(wait, l.gap))
			if l.pending == nil {
				l.pending = &m
			}
			l.log.Warn("chat message update failed; will send the newest content again", "channel", l.ref.Channel, "ts", l.ref.ID, "err", err, "retry_in", wait)
		default:
			l.failures = 0
		}
		l.mu.Unlock()
	}
}
