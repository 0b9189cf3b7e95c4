package slackchat

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/slack-go/slack"
	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/chat"
	"github.com/runbot/runbot/dispatch"
)

// fakeSlack is an in-memory Slack Web API for tests inside a synctest
// bubble, where a real HTTP connection would keep the fake clock from
// advancing. It records when each call came and can answer 429.
type fakeSlack struct {
	mu      sync.Mutex
	updates []fakeCall
	posts   []fakeCall
	// limited are the Retry-After of the next calls to answer 429.
	limited []time.Duration
}

type fakeCall struct {
	at   time.Time
	text string
}

func (f *fakeSlack) call(list *[]fakeCall, opts []slack.MsgOption) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.limited) > 0 {
		wait := f.limited[0]
		f.limited = f.limited[1:]
		return &slack.RateLimitedError{RetryAfter: wait}
	}
	_, values, err := slack.UnsafeApplyMsgOptions("xoxb-fake", "C1", "https://slack.invalid/", opts...)
	if err != nil {
		return err
	}
	*list = append(*list, fakeCall{at: time.Now(), text: values.Get("text")})
	return nil
}

func (f *fakeSlack) PostMessageContext(_ context.Context, _ string, opts ...slack.MsgOption) (string, string, error) {
	return "C1", "1.1", f.call(&f.posts, opts)
}

func (f *fakeSlack) UpdateMessageContext(_ context.Context, _, ts string, opts ...slack.MsgOption) (string, string, string, error) {
	return "C1", ts, "", f.call(&f.updates, opts)
}

func (f *fakeSlack) PostEphemeralContext(_ context.Context, _, _ string, opts ...slack.MsgOption) (string, error) {
	return "1.2", f.call(&f.posts, opts)
}

func (f *fakeSlack) GetUserGroupMembersContext(context.Context, string, ...slack.GetUserGroupMembersOption) ([]string, error) {
	return nil, nil
}

func (f *fakeSlack) sent() []fakeCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeCall(nil), f.updates...)
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// bgTasks runs a Live's senders in a test and waits for them, as the
// dispatcher's tasks do.
type bgTasks struct{ wg sync.WaitGroup }

func (b *bgTasks) Go(_ string, timeout time.Duration, fn func(context.Context)) error {
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		fn(ctx)
	}()
	return nil
}

func (b *bgTasks) Idle(context.Context) error {
	b.wg.Wait()
	return nil
}

func newTestLive(api slackAPI, gap time.Duration) (*dispatch.Live, *bgTasks) {
	log := quietLog()
	ts := &bgTasks{}
	m := &messenger{api: api, log: log}
	return dispatch.NewLive(&outgoing{msgr: m, log: log}, ts.Go, log, chat.Ref{Platform: slackPlatform, Channel: "C1", ID: "1.1"}, gap), ts
}

func msg(n int) chat.Message { return chat.Message{Title: fmt.Sprintf("state %d", n)} }

func TestLiveMessageCoalescesToOneUpdatePerGap(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		api := &fakeSlack{}
		live, ts := newTestLive(api, time.Second)
		start := time.Now()
		// 50 states over 5 seconds, one every 100ms.
		for i := 1; i <= 50; i++ {
			live.Set(msg(i))
			time.Sleep(100 * time.Millisecond)
		}
		require.NoError(t, live.Flush(t.Context()))
		require.NoError(t, ts.Idle(t.Context()))

		sent := api.sent()
		require.LessOrEqual(t, len(sent), 6, "about one update per second")
		require.GreaterOrEqual(t, len(sent), 4, "updates flow while states change, not only at the end")
		prev := start
		for _, c := range sent {
			require.GreaterOrEqual(t, c.at.Sub(prev), time.Second, "updates at least a gap apart")
			prev = c.at
		}
		require.Equal(t, "state 50", sent[len(sent)-1].text, "the last state always arrives")
	})
}

func TestLiveMessageWaitsOutRateLimitAndLosesNothing(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		api := &fakeSlack{limited: []time.Duration{7 * time.Second}}
		live, ts := newTestLive(api, time.Second)
		start := time.Now()
		live.Set(msg(1))
		// While the sender waits out the rate limit, newer states arrive.
		time.Sleep(3 * time.Second)
		live.Set(msg(2))
		live.Set(msg(3))
		require.NoError(t, live.Flush(t.Context()))
		require.NoError(t, ts.Idle(t.Context()))

		sent := api.sent()
		require.Len(t, sent, 1, "the rate-limited content is replaced by the newest, sent once")
		require.Equal(t, "state 3", sent[0].text)
		require.GreaterOrEqual(t, sent[0].at.Sub(start), 8*time.Second, "Retry-After (7s) after the first try (at 1s) was honoured")
	})
}

func TestLiveMessageRetriesTheSameContentAfter429(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		api := &fakeSlack{limited: []time.Duration{2 * time.Second, 3 * time.Second}}
		live, ts := newTestLive(api, time.Second)
		live.Set(msg(1))
		require.NoError(t, live.Flush(t.Context()))
		require.NoError(t, ts.Idle(t.Context()))
		sent := api.sent()
		require.Len(t, sent, 1)
		require.Equal(t, "state 1", sent[0].text)
	})
}

func TestPostWaitsOutRateLimit(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		api := &fakeSlack{limited: []time.Duration{4 * time.Second, 0}}
		m := &messenger{api: api, log: quietLog()}
		start := time.Now()
		_, err := m.post(t.Context(), "C1", "", msg(1))
		require.NoError(t, err)
		require.Len(t, api.posts, 1)
		require.Equal(t, 5*time.Second, api.posts[0].at.Sub(start), "4s Retry-After, then at least 1s for a missing one")

		// A caller's deadline ends the waiting.
		api.limited = []time.Duration{time.Minute}
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		_, err = m.post(ctx, "C1", "", msg(2))
		require.ErrorContains(t, err, "waiting out a rate limit")
	})
}

// The real HTTP path: Slack answers 429 with Retry-After to the first post
// and the first update; the run's message still arrives complete.
func TestRateLimitedSlackLosesNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.rec.FailNext("chat.postMessage", slackrecFailure429(1))
	h.rec.FailNext("chat.update", slackrecFailure429(1))
	_, ts := h.runOnce("")
	posts := h.rec.Calls("chat.postMessage")
	require.Len(t, posts, 2, "the post was retried once")
	require.Equal(t, 429, posts[0].Status)
	require.Equal(t, 200, posts[1].Status)
	updates := h.rec.Calls("chat.update")
	require.Equal(t, 429, updates[0].Status)
	final := h.lastMessage(ts)
	require.Contains(t, final.Text(), "Health says 200 but the worker made no progress for 600s.")
	require.True(t, hasButtons(final))
	require.Contains(t, h.logs.String(), "slack rate limit")
	require.True(t, strings.HasPrefix(final.Form.Get("ts"), "1700000000."))

	// The metrics an operator watches count each attempt by its outcome.
	calls := h.slack.metrics.calls
	require.Equal(t, 1.0, testutil.ToFloat64(calls.WithLabelValues("chat.postMessage", "rate_limited")))
	require.Equal(t, 1.0, testutil.ToFloat64(calls.WithLabelValues("chat.postMessage", "ok")))
	require.Equal(t, 1.0, testutil.ToFloat64(calls.WithLabelValues("chat.update", "rate_limited")))
	require.Equal(t, float64(len(updates)-1), testutil.ToFloat64(calls.WithLabelValues("chat.update", "ok")))
	require.Zero(t, testutil.ToFloat64(calls.WithLabelValues("chat.update", "error")))
	require.GreaterOrEqual(t, testutil.CollectAndCount(h.slack, "runbot_slack_api_call_duration_seconds"), 2, "timed per method")
}
