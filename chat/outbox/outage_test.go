package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/chat"
	"github.com/runbot/runbot/chat/outbox"
	"github.com/runbot/runbot/store"
)

// downPlatform is the package's fake platform with a switch: while down,
// every call fails the way a Slack outage fails calls (a 5xx answer, a
// refused connection, or no answer at all until the caller gives up), and
// the failed calls are counted rather than recorded. It is a copy rather
// than a change of platform, which other tests share.
type downPlatform struct {
	mu     sync.Mutex
	down   bool
	calls  []call
	failed int
	n      int
}

func (p *downPlatform) setDown(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = down
}

// outageError is the failure of the n-th call of an outage: one in three
// a 503, one in three a refused connection (as net/http reports it), and
// one in three a call that hangs until the caller's deadline, as when the
// load balancer takes the connection but nothing answers behind it.
func outageError(ctx context.Context, n int) error {
	switch n % 3 {
	case 0:
		return errors.New("slack server error: 503 Service Unavailable")
	case 1:
		return &url.Error{Op: "Post", URL: "https://slack.com/api/chat.postMessage", Err: &net.OpError{
			Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused"),
		}}
	default:
		<-ctx.Done()
		return fmt.Errorf("slack: %w", context.Cause(ctx))
	}
}

func (p *downPlatform) next(ctx context.Context, op string, c call) error {
	p.mu.Lock()
	if p.down {
		p.failed++
		n := p.failed
		p.mu.Unlock()
		return outageError(ctx, n)
	}
	defer p.mu.Unlock()
	c.op, c.at = op, time.Now()
	if op == "post" {
		p.n++
		c.id = fmt.Sprintf("1700000000.%06d", p.n)
	}
	p.calls = append(p.calls, c)
	return nil
}

func (p *downPlatform) Post(ctx context.Context, channel, thread string, m chat.Message) (chat.Ref, error) {
	if err := p.next(ctx, "post", call{channel: channel, thread: thread, title: m.Title}); err != nil {
		return chat.Ref{}, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return chat.Ref{Platform: "test", Channel: channel, ID: p.calls[len(p.calls)-1].id}, nil
}

func (p *downPlatform) Update(ctx context.Context, ref chat.Ref, m chat.Message) error {
	return p.next(ctx, "update", call{channel: ref.Channel, id: ref.ID, title: m.Title})
}

func (p *downPlatform) Upload(ctx context.Context, channel, thread string, f chat.File) error {
	return p.next(ctx, "upload", call{channel: channel, thread: thread, title: f.Title})
}

func (p *downPlatform) snapshot() ([]call, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]call(nil), p.calls...), p.failed
}

// sent is one message the test queued: its outbox reference, where it
// goes, and the newest content it was given.
type sent struct {
	name    string
	ref     chat.Ref
	channel string
	// parent is the name of the message whose thread this replies in.
	parent string
	newest string
}

// counter reads one counter of the outbox's metrics, summed over its labels.
func counter(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	total := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metric:
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if want, ok := labels[l.GetName()]; ok && want != l.GetValue() {
					continue metric
				}
			}
			total += m.GetCounter().GetValue()
		}
	}
	return total
}

// TestSlackOutageOfFiveMinutes is issue 33's "done when": Slack is down for
// five minutes while runs keep posting, at the outbox's production pace and
// backoff; nothing restarts, the callers never wait, and once Slack is back
// every message is delivered once, in order, with its newest content, and
// soon. The five minutes are fake time in a synctest bubble: the store is a
// real SQLite file, opened and closed inside the bubble so that
// database/sql's goroutines belong to it and end with it.
func TestSlackOutageOfFiveMinutes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &downPlatform{}
		s, err := store.Open(t.Context(), filepath.Join(t.TempDir(), "runbot.db"))
		require.NoError(t, err)
		o := outbox.New(p, s, outbox.Config{Platform: "test"}, slog.New(slog.DiscardHandler), nil)
		reg := prometheus.NewRegistry()
		reg.MustRegister(o)
		ctx, cancel := context.WithCancel(context.Background())
		stopped := make(chan struct{})
		go func() {
			defer close(stopped)
			_ = o.Run(ctx)
		}()

		var (
			msgs   = map[string]*sent{}
			queued = map[string][]string{} // channel: message names in queue order
		)
		// post and update are what a run does; each must return at once
		// and without error, whatever Slack does. In the bubble time only
		// passes while every goroutine waits, so a call that waited for
		// the sender or for Slack (whose failing calls take up to 30 s
		// here) would show as time passed.
		post := func(name, channel, parent string) {
			thread := ""
			if parent != "" {
				thread = msgs[parent].ref.ID
			}
			title := name + " v1"
			before := time.Now()
			ref, err := o.Post(t.Context(), channel, thread, chat.Message{Title: title})
			require.NoError(t, err, "posting %s", name)
			require.Zero(t, time.Since(before), "posting %s returned at once", name)
			msgs[name] = &sent{name: name, ref: ref, channel: channel, parent: parent, newest: title}
			queued[channel] = append(queued[channel], name)
		}
		update := func(name string, version int) {
			title := fmt.Sprintf("%s v%d", name, version)
			before := time.Now()
			require.NoError(t, o.Update(t.Context(), msgs[name].ref, chat.Message{Title: title}), "updating %s", name)
			require.Zero(t, time.Since(before), "updating %s returned at once", name)
			msgs[name].newest = title
		}
		channels := []string{"C1", "C2", "C3"}

		// Before the outage each channel gets a message that is then
		// updated all through it, as a run's status message is.
		for _, ch := range channels {
			post(ch+"/before", ch, "")
		}
		time.Sleep(5 * time.Second)
		calls, _ := p.snapshot()
		require.Len(t, calls, 3, "the first messages are delivered while Slack is up")

		// Slack goes down for five minutes. Every 30 s each channel gets a
		// post and its first message a new status; the first outage post
		// of each channel is updated before Slack ever has it; C1 replies
		// in the thread of a message posted during the outage, C2 in the
		// thread of one posted before it.
		p.setDown(true)
		down := time.Now()
		const outage = 5 * time.Minute
		for i := range 10 {
			for _, ch := range channels {
				post(fmt.Sprintf("%s/%02d", ch, i), ch, "")
				update(ch+"/before", i+2)
			}
			switch i {
			case 2, 6:
				for _, ch := range channels {
					update(ch+"/00", i/2+1)
				}
			case 3:
				post("C1/reply-00", "C1", "C1/00")
			case 4:
				post("C2/reply-before", "C2", "C2/before")
			}
			time.Sleep(30 * time.Second)
		}
		require.Equal(t, outage, time.Since(down))
		calls, failedDuringOutage := p.snapshot()
		require.Len(t, calls, 3, "nothing gets through while Slack is down")
		// The sender kept trying, but backed off rather than hammering
		// Slack: four lanes (three channels and the updates), each at
		// most about a call per doubling of its wait and then one every
		// 2 min, make a few dozen calls in five minutes, not hundreds.
		require.Positive(t, failedDuringOutage)
		require.LessOrEqual(t, failedDuringOutage, 4*20)
		select {
		case <-stopped:
			require.FailNow(t, "the sender stopped during the outage")
		default:
		}
		// Nothing is given up, and everything waits in the store.
		b, err := o.Backlog(t.Context())
		require.NoError(t, err)
		require.Equal(t, 3+30+2, b.Due, "every message of the outage waits for delivery: 3 updates, 30 posts, 2 replies")
		require.Zero(t, counter(t, reg, "runbot_chat_outbox_given_up_total", nil))

		// Slack comes back. The sender needs no restart: the same Run
		// delivers the backlog once its backoff (at most 2 min) runs out.
		p.setDown(false)
		up := time.Now()
		const within = 10 * time.Minute
		for {
			time.Sleep(time.Second)
			b, err := o.Backlog(t.Context())
			require.NoError(t, err)
			if b.Due == 0 {
				break
			}
			require.Less(t, time.Since(up), within, "the backlog is delivered after the outage: %d messages still due", b.Due)
		}
		// Whatever the sender would still do, it does within a minute.
		time.Sleep(time.Minute)
		calls, failed := p.snapshot()
		require.Equal(t, failedDuringOutage, failed, "no call fails once Slack is back")
		select {
		case <-stopped:
			require.FailNow(t, "the sender stopped")
		default:
		}

		// The store agrees: nothing due, nothing given up, every message
		// done with the platform's id, and the metrics say the same.
		for name, m := range msgs {
			got, err := s.GetChatMessage(t.Context(), m.ref.ID)
			require.NoError(t, err)
			require.Equal(t, store.ChatMessageDone, got.State, "%s is delivered (last error %q)", name, got.LastError)
			require.NotEmpty(t, got.PlatformID, name)
		}
		require.Zero(t, counter(t, reg, "runbot_chat_outbox_given_up_total", nil))
		deliveredPosts := counter(t, reg, "runbot_chat_outbox_delivered_total", map[string]string{"kind": "post"})
		cancel()
		<-stopped
		require.NoError(t, s.Close())

		// Every message is posted exactly once: a post's title is the
		// message's name and the version of its content.
		byPlatformID := map[string]*sent{}
		posted := map[string][]string{} // channel: names in the order posted
		var last time.Time
		for _, c := range calls {
			last = c.at
			if c.op != "post" {
				continue
			}
			name, _, ok := strings.Cut(c.title, " v")
			require.True(t, ok, c.title)
			m := msgs[name]
			require.NotNil(t, m, "a post of a message never queued: %q", c.title)
			require.NotContains(t, byPlatformID, name, "posted twice: %s", name)
			require.Equal(t, m.channel, c.channel, name)
			if m.parent != "" {
				parent := msgs[m.parent]
				require.NotEmpty(t, parent.ref.ID)
				var parentID string
				for id, pm := range byPlatformID {
					if pm == parent {
						parentID = id
					}
				}
				require.NotEmpty(t, parentID, "the reply %s is posted after its thread's first message", name)
				require.Equal(t, parentID, c.thread, "the reply %s is in its thread", name)
			}
			byPlatformID[c.id] = m
			posted[c.channel] = append(posted[c.channel], name)
		}
		posts := 0
		for _, ch := range channels {
			require.Equal(t, queued[ch], posted[ch], "the posts to %s are delivered in the order they were queued", ch)
			posts += len(posted[ch])
		}
		require.Equal(t, 3+30+2, posts)

		// Each message ends with its newest content: the last call that
		// carried it, post or update, had that content.
		content := map[string]string{}
		updates := 0
		for _, c := range calls {
			switch c.op {
			case "post":
				name, _, _ := strings.Cut(c.title, " v")
				content[name] = c.title
			case "update":
				m := byPlatformID[c.id]
				require.NotNil(t, m, "an update of a message never posted: %s", c.id)
				content[m.name] = c.title
				updates++
			}
		}
		for name, m := range msgs {
			require.Equal(t, m.newest, content[name], "%s shows its newest content", name)
		}
		// The 36 updates cost at most one call per updated message: the
		// three status messages and the three outage posts updated before
		// Slack had them, should their post carry older content.
		require.LessOrEqual(t, updates, 6, "updates are coalesced to the newest content")

		require.Equal(t, float64(posts), deliveredPosts)

		// Delivery after recovery is bounded: a call that hung when Slack
		// came back (30 s at most), the longest wait the backoff allows
		// (2 min), then the backlog at Slack's pace, one post a second per
		// channel (12 in C1) and one update every 1.2 s, in parallel, and
		// a poll of the store (1 s).
		var first time.Time
		for _, c := range calls[3:] {
			if first.IsZero() || c.at.Before(first) {
				first = c.at
			}
		}
		recovery := last.Sub(up)
		t.Logf("outage of %s: %d calls failed; after recovery %d posts (%d of them replies) and %d updates delivered, the first %s and the last %s after Slack came back",
			outage, failedDuringOutage, posts-3, 2, updates, first.Sub(up), recovery)
		require.LessOrEqual(t, recovery, 30*time.Second+2*time.Minute+15*time.Second)
	})
}

// unrecordedDeliveries is a store that cannot record the first deliveries
// it is told of, as a full, read-only or cut-off store cannot right after
// the platform took a post.
type unrecordedDeliveries struct {
	store.ChatOutbox
	mu   sync.Mutex
	fail int
}

func (u *unrecordedDeliveries) ChatMessageDelivered(ctx context.Context, d store.ChatDelivery) (store.ChatMessage, error) {
	u.mu.Lock()
	if u.fail > 0 {
		u.fail--
		u.mu.Unlock()
		return store.ChatMessage{}, errors.New("database is locked")
	}
	u.mu.Unlock()
	return u.ChatOutbox.ChatMessageDelivered(ctx, d)
}

// TestAPostTheStoreCouldNotRecordIsNotPostedAgain: Slack takes a post and
// the store cannot record it for a while. The post is recorded once the
// store takes it, and the message's next content updates that post: it
// is not posted a second time when its claim is taken again.
func TestAPostTheStoreCouldNotRecordIsNotPostedAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &platform{}
		s, err := store.Open(t.Context(), filepath.Join(t.TempDir(), "runbot.db"))
		require.NoError(t, err)
		st := &unrecordedDeliveries{ChatOutbox: s, fail: 4}
		o := outbox.New(p, st, outbox.Config{Platform: "test"}, slog.New(slog.DiscardHandler), nil)
		ctx, cancel := context.WithCancel(context.Background())
		stopped := make(chan struct{})
		go func() {
			defer close(stopped)
			_ = o.Run(ctx)
		}()

		ref, err := o.Post(t.Context(), "C1", "", chat.Message{Title: "running"})
		require.NoError(t, err)
		time.Sleep(time.Minute)
		require.NoError(t, o.Update(t.Context(), ref, chat.Message{Title: "finished"}))
		// Past the claim's lease: a post left unrecorded would be claimed
		// and posted again by now.
		time.Sleep(10 * time.Minute)

		calls := p.snapshot()
		require.Len(t, calls, 2, "%+v", calls)
		require.Equal(t, "post", calls[0].op)
		require.Equal(t, "update", calls[1].op)
		require.Equal(t, calls[0].id, calls[1].id, "the update goes to the one post")
		require.Equal(t, "finished", calls[1].title)
		m, err := s.GetChatMessage(t.Context(), ref.ID)
		require.NoError(t, err)
		require.Equal(t, calls[0].id, m.PlatformID)

		cancel()
		<-stopped
		require.NoError(t, s.Close())
	})
}
