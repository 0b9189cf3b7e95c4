package dispatch

import (
	"context"
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
// newest by then, so nothing is lost: the last state always arrives.
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
}

// liveSendTimeout bounds one sender's life; it exits when idle anyway.
const liveSendTimeout = 5 * time.Minute

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

		err := l.chat.Update(ctx, l.ref, m)

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
		case err != nil:
			l.log.Warn("chat message update failed", "channel", l.ref.Channel, "ts", l.ref.ID, "err", err)
		}
		l.mu.Unlock()
	}
}
