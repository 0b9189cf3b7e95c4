package bot

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/slack-go/slack"
)

// liveMessage keeps one posted Slack message up to date. Callers set the
// newest content as often as they like; a sender sends the newest content
// at most once per gap (Slack allows about one chat.update per second per
// message), so intermediate states coalesce. When Slack answers 429, the
// sender waits the Retry-After it was given and then sends whatever is
// newest by then, so nothing is lost: the last state always arrives.
type liveMessage struct {
	msgr        *messenger
	tasks       *tasks
	log         *slog.Logger
	channel, ts string
	gap         time.Duration

	mu      sync.Mutex
	pending *Message
	sending bool
	// next is the earliest time the next update may be sent.
	next time.Time
	// done is closed when the current sender exits.
	done chan struct{}
}

// liveSendTimeout bounds one sender's life; it exits when idle anyway.
const liveSendTimeout = 5 * time.Minute

func newLiveMessage(msgr *messenger, t *tasks, log *slog.Logger, channel, ts string, gap time.Duration) *liveMessage {
	done := make(chan struct{})
	close(done)
	// The message was just posted: the first update waits one gap too.
	return &liveMessage{msgr: msgr, tasks: t, log: log, channel: channel, ts: ts, gap: gap, done: done, next: time.Now().Add(gap)}
}

// set makes m the content to send next, replacing any unsent content.
func (l *liveMessage) set(m Message) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pending = &m
	if l.sending {
		return
	}
	l.sending = true
	l.done = make(chan struct{})
	if err := l.tasks.Go("slack message update", liveSendTimeout, l.send); err != nil {
		l.sending = false
		close(l.done)
		l.log.Warn("slack message not updated", "channel", l.channel, "ts", l.ts, "err", err)
	}
}

// flush waits until the newest content was sent (or given up on).
func (l *liveMessage) flush(ctx context.Context) error {
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

func (l *liveMessage) send(ctx context.Context) {
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

		err := l.msgr.update(ctx, l.channel, l.ts, m)

		l.mu.Lock()
		l.next = time.Now().Add(l.gap)
		var rl *slack.RateLimitedError
		switch {
		case errors.As(err, &rl):
			l.next = time.Now().Add(max(rl.RetryAfter, l.gap, time.Second))
			if l.pending == nil {
				l.pending = &m
			}
			l.log.Warn("slack rate limit on chat.update; will send the newest content after Retry-After",
				"channel", l.channel, "ts", l.ts, "retry_after", rl.RetryAfter)
		case err != nil:
			l.log.Warn("slack message update failed", "channel", l.channel, "ts", l.ts, "err", err)
		}
		l.mu.Unlock()
	}
}
