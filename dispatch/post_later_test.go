package dispatch

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/chat"
	"github.com/runbot/runbot/chat/chattest"
	"github.com/runbot/runbot/chat/outbox"
	"github.com/runbot/runbot/store"
)

// lostQueue is the real store whose next QueueChatMessage calls fail. The
// first of them fails after its write went through (the commit's answer
// was lost), as when PostgreSQL's primary is lost mid-commit; the others
// fail before it.
type lostQueue struct {
	store.Store
	left  atomic.Int32
	calls atomic.Int32
}

func (f *lostQueue) QueueChatMessage(ctx context.Context, m store.ChatMessage) (store.ChatMessage, bool, error) {
	f.calls.Add(1)
	n := f.left.Add(-1)
	switch {
	case n < 0:
		return f.Store.QueueChatMessage(ctx, m)
	case f.calls.Load() == 1:
		if _, _, err := f.Store.QueueChatMessage(ctx, m); err != nil {
			return store.ChatMessage{}, false, err
		}
	}
	return store.ChatMessage{}, false, errors.New("queue chat message in " + m.Channel + ": commit: conn closed")
}

// A run whose first message the outbox could not queue (the store failed
// just then) still gets its message, once the store takes it, showing the
// run's end: the verdict is never left unsaid. The retry is keyed by the
// run, so a first try whose write went through posts no second message.
func TestRunMessageQueuedWhenTheStoreIsBack(t *testing.T) {
	t.Parallel()
	lost := &lostQueue{}
	lost.left.Store(2)
	rec, st, work := runAlertThrough(t, lost, func(s store.Store) { lost.Store = s })
	require.Equal(t, store.WorkDone, work.State)
	run, err := st.GetRun(t.Context(), work.RunID)
	require.NoError(t, err)
	require.Equal(t, store.RunFinished, run.Status)
	require.NotNil(t, run.Message, "the message is recorded on the run")
	require.GreaterOrEqual(t, lost.calls.Load(), int32(3), "queued on the third try")

	require.Eventually(t, func() bool {
		posts := rec.Posts()
		if len(posts) != 1 {
			return false
		}
		last := posts[0].Last()
		return last.Status != chat.StatusRunning && last.Status != chat.StatusPending
	}, 30*time.Second, 20*time.Millisecond, "the message shows how the run ended")
	posts := rec.Posts()
	require.Len(t, posts, 1, "one message: the lost first try and its retry are one")
	require.Contains(t, posts[0].Last().Text(), run.ID)
}

// unrecordedMessage is the real store whose first SetRunMessage calls
// fail, as when the store breaks just after a run's message was queued.
type unrecordedMessage struct {
	store.Store
	left atomic.Int32
}

func (f *unrecordedMessage) SetRunMessage(ctx context.Context, id string, ref store.MessageRef) error {
	if f.left.Add(-1) >= 0 {
		return errors.New("set message of run " + id + ": begin: conn closed")
	}
	return f.Store.SetRunMessage(ctx, id, ref)
}

// A run whose message was queued but could not be recorded on the run
// (the store failed between the two) names it all the same once the store
// takes it: a click on the message, a vote on another replica and the
// run's history find it. Before, the reference was dropped.
func TestRunMessageRecordedWhenTheStoreIsBack(t *testing.T) {
	t.Parallel()
	failing := &unrecordedMessage{}
	failing.left.Store(2)
	_, st, work := runAlertThrough(t, failing, func(s store.Store) { failing.Store = s })
	require.Eventually(t, func() bool {
		run, err := st.GetRun(t.Context(), work.RunID)
		require.NoError(t, err)
		return run.Message != nil
	}, 30*time.Second, 50*time.Millisecond, "the message is recorded on the run")
}

// runAlertThrough runs one alert's run on a dispatcher and outbox whose
// store is faulty, a wrapper of the real store that setInner gives it,
// with chat at a recorder. It returns once the dispatcher is idle: the
// recorder, the real store, and the alert's work.
func runAlertThrough(t *testing.T, faulty store.Store, setInner func(store.Store)) (*chattest.Recorder, store.Store, store.Work) {
	t.Helper()
	rec := chattest.New()
	ob := outbox.New(rec, faulty, outbox.Config{Platform: chattest.Platform}, slog.New(slog.DiscardHandler), nil)
	d, st, dir := newChatDispatcherWith(t, ob, testSetup{wrap: func(s store.Store) store.Store { setInner(s); return faulty }})
	ctx, stop := context.WithCancel(context.Background())
	sent := make(chan error, 1)
	go func() { sent <- ob.Run(ctx) }()
	t.Cleanup(func() {
		stop()
		require.NoError(t, <-sent)
	})

	acc, err := d.Submit(t.Context(), Request{
		Runbook: "stuck-worker", Params: map[string]string{"host": "here", "dir": dir},
		RequestedBy: "alertmanager", Source: store.TriggerAlert, Key: "alert/fp/1",
	})
	require.NoError(t, err)
	require.NoError(t, d.Idle(t.Context()), "the run ends, and its message is queued in the end")
	work, err := st.GetWork(t.Context(), acc.WorkID)
	require.NoError(t, err)
	return rec, st, work
}
