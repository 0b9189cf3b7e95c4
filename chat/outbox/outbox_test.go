package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/chat"
	"github.com/runbot/runbot/chat/outbox"
	"github.com/runbot/runbot/store"
)

// platform is a chat platform that records what it was given and fails
// the calls a test scripts. It is the one fake of this package's tests:
// the outbox's own contract is what it does with the platform's answers.
type platform struct {
	mu    sync.Mutex
	calls []call
	fail  []error
	n     int
}

type call struct {
	op      string
	channel string
	thread  string
	id      string
	title   string
	at      time.Time
}

func (p *platform) next(op string, c call) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.fail) > 0 {
		err := p.fail[0]
		p.fail = p.fail[1:]
		if err != nil {
			return err
		}
	}
	c.op, c.at = op, time.Now()
	if op == "post" {
		p.n++
		c.id = fmt.Sprintf("1700000000.%06d", p.n)
	}
	p.calls = append(p.calls, c)
	return nil
}

func (p *platform) Post(_ context.Context, channel, thread string, m chat.Message) (chat.Ref, error) {
	c := call{channel: channel, thread: thread, title: m.Title}
	if err := p.next("post", c); err != nil {
		return chat.Ref{}, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return chat.Ref{Platform: "test", Channel: channel, ID: p.calls[len(p.calls)-1].id}, nil
}

func (p *platform) Update(_ context.Context, ref chat.Ref, m chat.Message) error {
	return p.next("update", call{channel: ref.Channel, id: ref.ID, title: m.Title})
}

func (p *platform) Upload(_ context.Context, channel, thread string, f chat.File) error {
	return p.next("upload", call{channel: channel, thread: thread, title: f.Title})
}

func (p *platform) failNext(errs ...error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fail = append(p.fail, errs...)
}

func (p *platform) snapshot() []call {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]call(nil), p.calls...)
}

// waitCalls waits until the platform has n calls.
func (p *platform) waitCalls(t *testing.T, n int, within time.Duration) []call {
	t.Helper()
	var got []call
	require.Eventually(t, func() bool {
		got = p.snapshot()
		return len(got) >= n
	}, within, 20*time.Millisecond, "the platform got %d calls, want %d", len(p.snapshot()), n)
	return got
}

func openStore(t *testing.T, path string) store.Store {
	t.Helper()
	s, err := store.Open(t.Context(), path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// start runs an outbox at the production pace until the test ends.
func start(t *testing.T, p chat.Chat, s store.ChatOutbox) *outbox.Outbox {
	t.Helper()
	o := outbox.New(p, s, outbox.Config{Platform: "test"}, nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = o.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return o
}

func TestPostReturnsAtOnceAndNewestContentIsPosted(t *testing.T) {
	p := &platform{}
	s := openStore(t, filepath.Join(t.TempDir(), "runbot.db"))
	o := outbox.New(p, s, outbox.Config{Platform: "test"}, nil, nil)
	ref, err := o.Post(t.Context(), "C1", "", chat.Message{Title: "v1"})
	require.NoError(t, err)
	require.Equal(t, "C1", ref.Channel)
	require.Regexp(t, "^m-", ref.ID, "the outbox's reference, before the platform has the message")
	require.NoError(t, o.Update(t.Context(), ref, chat.Message{Title: "v2"}))
	require.NoError(t, o.Update(t.Context(), ref, chat.Message{Title: "v3"}))
	require.Empty(t, p.snapshot(), "nothing is sent before the outbox runs")

	start(t, p, s)
	got := p.waitCalls(t, 1, 10*time.Second)
	require.Equal(t, "post", got[0].op)
	require.Equal(t, "v3", got[0].title, "the newest content is posted, once")
	time.Sleep(2 * time.Second)
	require.Len(t, p.snapshot(), 1, "nothing left to update")
	m, err := s.GetChatMessage(t.Context(), ref.ID)
	require.NoError(t, err)
	require.Equal(t, store.ChatMessageDone, m.State)
	require.Equal(t, got[0].id, m.PlatformID)
}

func TestOrderedPerChannelRepliesFollowTheirThread(t *testing.T) {
	p := &platform{}
	s := openStore(t, filepath.Join(t.TempDir(), "runbot.db"))
	o := start(t, p, s)
	ctx := t.Context()
	first, err := o.Post(ctx, "C1", "", chat.Message{Title: "first"})
	require.NoError(t, err)
	_, err = o.Post(ctx, "C1", first.ID, chat.Message{Title: "reply"})
	require.NoError(t, err)
	_, err = o.Post(ctx, "C1", "", chat.Message{Title: "second"})
	require.NoError(t, err)
	_, err = o.Post(ctx, "C2", "", chat.Message{Title: "elsewhere"})
	require.NoError(t, err)

	got := p.waitCalls(t, 4, 15*time.Second)
	var c1 []call
	for _, c := range got {
		if c.channel == "C1" {
			c1 = append(c1, c)
		}
	}
	require.Len(t, c1, 3)
	require.Equal(t, []string{"first", "reply", "second"}, []string{c1[0].title, c1[1].title, c1[2].title})
	require.Equal(t, c1[0].id, c1[1].thread, "the reply goes in its thread, by the platform's id")
	for i := 1; i < len(c1); i++ {
		require.GreaterOrEqual(t, c1[i].at.Sub(c1[i-1].at), 900*time.Millisecond,
			"posts to one channel are about a second apart (Slack's pace)")
	}
}

func TestServerErrorsAreRetriedInOrder(t *testing.T) {
	p := &platform{}
	p.failNext(errors.New("slack server error: 500 Internal Server Error"), errors.New("dial tcp: connection refused"))
	s := openStore(t, filepath.Join(t.TempDir(), "runbot.db"))
	o := start(t, p, s)
	_, err := o.Post(t.Context(), "C1", "", chat.Message{Title: "run r-1"})
	require.NoError(t, err)
	_, err = o.Post(t.Context(), "C1", "", chat.Message{Title: "run r-2"})
	require.NoError(t, err)
	got := p.waitCalls(t, 2, 20*time.Second)
	require.Equal(t, "run r-1", got[0].title, "the failed first post is not overtaken")
	require.Equal(t, "run r-2", got[1].title)
}

func TestRateLimitIsWaitedOut(t *testing.T) {
	p := &platform{}
	p.failNext(&chat.RateLimitedError{RetryAfter: 3 * time.Second, Err: errors.New("slack rate limit exceeded")})
	s := openStore(t, filepath.Join(t.TempDir(), "runbot.db"))
	o := start(t, p, s)
	queued := time.Now()
	_, err := o.Post(t.Context(), "C1", "", chat.Message{Title: "limited"})
	require.NoError(t, err)
	got := p.waitCalls(t, 1, 20*time.Second)
	require.GreaterOrEqual(t, got[0].at.Sub(queued), 3*time.Second, "the Retry-After was honoured")
}

func TestRefusedMessageIsGivenUpAndItsRepliesStillPosted(t *testing.T) {
	p := &platform{}
	p.failNext(&chat.RejectedError{Reason: "msg_too_long", Err: errors.New("msg_too_long")})
	s := openStore(t, filepath.Join(t.TempDir(), "runbot.db"))
	o := start(t, p, s)
	parent, err := o.Post(t.Context(), "C1", "", chat.Message{Title: "too long"})
	require.NoError(t, err)
	_, err = o.Post(t.Context(), "C1", parent.ID, chat.Message{Title: "reply"})
	require.NoError(t, err)
	got := p.waitCalls(t, 1, 15*time.Second)
	require.Equal(t, "reply", got[0].title)
	require.Empty(t, got[0].thread, "posted in the channel, since its thread never will be")
	m, err := s.GetChatMessage(t.Context(), parent.ID)
	require.NoError(t, err)
	require.Equal(t, store.ChatMessageFailed, m.State)
	require.Contains(t, m.LastError, "msg_too_long")
}

func TestUpdatesCoalesce(t *testing.T) {
	p := &platform{}
	s := openStore(t, filepath.Join(t.TempDir(), "runbot.db"))
	o := start(t, p, s)
	ref, err := o.Post(t.Context(), "C1", "", chat.Message{Title: "v0"})
	require.NoError(t, err)
	p.waitCalls(t, 1, 10*time.Second)
	burst := time.Now()
	for i := 1; i <= 20; i++ {
		require.NoError(t, o.Update(t.Context(), ref, chat.Message{Title: fmt.Sprintf("v%d", i)}))
	}
	took := time.Since(burst)
	require.Eventually(t, func() bool {
		got := p.snapshot()
		return got[len(got)-1].title == "v20"
	}, 15*time.Second, 50*time.Millisecond, "the newest content arrives")
	got := p.snapshot()
	// One update per 1.2 s while the burst lasted (on a busy machine its
	// 20 writes to the store take a while), and the newest after it.
	most := 1 + int(took/(1200*time.Millisecond)) + 2
	require.LessOrEqual(t, len(got)-1, most, "20 updates in %s cost a few calls, not 20: %v", took, got)
	require.Less(t, len(got)-1, 20)
}

// A process that stops with messages undelivered leaves them to the next
// start, which delivers every one, in order, once.
func TestRestartDeliversWhatWasQueued(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runbot.db")
	down := &platform{}
	for range 50 {
		down.failNext(errors.New("slack server error: 503 Service Unavailable"))
	}
	s1 := openStore(t, path)
	o1 := outbox.New(down, s1, outbox.Config{Platform: "test"}, nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		_ = o1.Run(ctx)
	}()
	for i := range 5 {
		_, err := o1.Post(t.Context(), "C1", "", chat.Message{Title: fmt.Sprintf("m%d", i)})
		require.NoError(t, err)
	}
	time.Sleep(1500 * time.Millisecond)
	cancel()
	<-stopped
	require.Empty(t, down.snapshot())
	require.NoError(t, s1.Close())

	up := &platform{}
	s2 := openStore(t, path)
	start(t, up, s2)
	got := up.waitCalls(t, 5, 20*time.Second)
	for i, c := range got {
		require.Equal(t, fmt.Sprintf("m%d", i), c.title)
	}
	time.Sleep(1500 * time.Millisecond)
	require.Len(t, up.snapshot(), 5, "each message once")
}

// Drain returns once everything queued was delivered, and says how much
// was not when its deadline comes first.
func TestDrain(t *testing.T) {
	p := &platform{}
	s := openStore(t, filepath.Join(t.TempDir(), "runbot.db"))
	o := outbox.New(p, s, outbox.Config{Platform: "test"}, nil, nil)
	for i := range 2 {
		_, err := o.Post(t.Context(), "C1", "", chat.Message{Title: fmt.Sprintf("m%d", i)})
		require.NoError(t, err)
	}
	short, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	require.ErrorContains(t, o.Drain(short), "2 not delivered", "nothing sends before Run")
	start(t, p, s)
	require.NoError(t, o.Drain(t.Context()))
	require.Len(t, p.snapshot(), 2)
}

// silentReads is a store whose server went silent after the claim: a read
// of a message answers nothing until its caller gives up, as a pooled
// connection to a primary that lost power does.
type silentReads struct {
	store.ChatOutbox
	mu     sync.Mutex
	silent int
}

func (s *silentReads) GetChatMessage(ctx context.Context, id string) (store.ChatMessage, error) {
	s.mu.Lock()
	if s.silent > 0 {
		s.silent--
		s.mu.Unlock()
		<-ctx.Done()
		return store.ChatMessage{}, ctx.Err()
	}
	s.mu.Unlock()
	return s.ChatOutbox.GetChatMessage(ctx, id)
}

// A read that never answers holds the lane only for the store's deadline:
// the message claimed is posted with what the claim read, and so are the
// ones queued behind it. Before, the lane waited on the read for as long
// as the connection lived (a quarter of an hour on a dead primary), and
// every message claimed behind it with it.
func TestSilentStoreReadDoesNotHoldTheLane(t *testing.T) {
	p := &platform{}
	s := &silentReads{ChatOutbox: openStore(t, filepath.Join(t.TempDir(), "runbot.db")), silent: 1}
	o := start(t, p, s)
	for _, title := range []string{"first", "second"} {
		_, err := o.Post(t.Context(), "C1", "", chat.Message{Title: title})
		require.NoError(t, err)
	}
	got := p.waitCalls(t, 2, time.Minute)
	require.Equal(t, []string{"first", "second"}, []string{got[0].title, got[1].title})
}
