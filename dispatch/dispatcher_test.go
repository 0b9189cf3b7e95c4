package dispatch

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/chat"
	"github.com/runbot/runbot/chat/chattest"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/store"
)

// An alert's run goes into the alert message's thread, once per key.
func TestSubmitFromAlertPostsInThreadOnce(t *testing.T) {
	t.Parallel()
	rec := chattest.New()
	d, st, dir := newChatDispatcher(t, rec)
	req := Request{
		Key: "alert:abcc45788bcf7aa8:1", Runbook: "stuck-worker", Params: map[string]string{"host": "here", "dir": dir},
		RequestedBy: "alertmanager", Source: store.TriggerAlert, Channel: "C0ALERTS", Thread: "1700000000.000001",
		Payload: []byte(`{"fingerprint":"abcc45788bcf7aa8"}`),
	}
	acc, err := d.Submit(t.Context(), req)
	require.NoError(t, err)
	require.False(t, acc.Duplicate)
	require.NoError(t, d.Idle(t.Context()))
	again, err := d.Submit(t.Context(), req)
	require.NoError(t, err)
	require.True(t, again.Duplicate)
	require.Equal(t, acc.WorkID, again.WorkID)
	require.NotEmpty(t, again.RunID, "the duplicate names the run the first one started")
	require.NoError(t, d.Idle(t.Context()))

	posts := rec.Posts()
	require.Len(t, posts, 1)
	require.Equal(t, "C0ALERTS", posts[0].Ref.Channel)
	require.Equal(t, "1700000000.000001", posts[0].Thread)
	require.Contains(t, posts[0].Last().Text(), "Trigger: alert alertmanager")
	run, err := st.GetRun(t.Context(), again.RunID)
	require.NoError(t, err)
	require.Equal(t, store.TriggerAlert, run.Trigger)
	require.Equal(t, acc.WorkID, run.WorkID)
	require.Equal(t, posts[0].Ref, chat.Ref(*run.Message))
	work, err := st.GetWork(t.Context(), acc.WorkID)
	require.NoError(t, err)
	require.Equal(t, store.WorkDone, work.State)
}

// TestChatPacingDoesNotHoldARunSlot: at the production pace of one update
// per second per message, a quick run's final update waits about a second
// after its first post. Its slot goes to the next queued run as soon as
// its report is recorded, so runs are not limited to one per slot per
// second: with a single slot, the second run is posted before the first
// run's message shows its outcome. Both end up done and up to date.
func TestChatPacingDoesNotHoldARunSlot(t *testing.T) {
	t.Parallel()
	rec := chattest.New()
	d, st, dir := newChatDispatcherWith(t, rec, testSetup{defaultPacing: true, maxRuns: 1})
	var works []string
	for i := range 2 {
		acc, err := d.Submit(t.Context(), Request{
			Key: fmt.Sprintf("pacing:%d", i), Runbook: "stuck-worker", Params: map[string]string{"host": "here", "dir": dir},
			RequestedBy: "U0REQ", Source: store.TriggerCLI, Channel: opsChan,
		})
		require.NoError(t, err)
		works = append(works, acc.WorkID)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var firstShownFinal *bool
	require.NoError(t, rec.Wait(ctx, func(posts []chattest.Post) bool {
		if len(posts) < 2 {
			return false
		}
		final := posts[0].Last().Status != chat.StatusRunning
		firstShownFinal = &final
		return true
	}))
	require.False(t, *firstShownFinal, "the second run started while the first one's message waited for the chat's pace")

	require.NoError(t, d.Idle(t.Context()))
	for i, p := range rec.Posts() {
		require.NotEqual(t, chat.StatusRunning, p.Last().Status, "run %d's message shows its outcome", i)
	}
	for _, id := range works {
		w, err := st.GetWork(t.Context(), id)
		require.NoError(t, err)
		require.Equal(t, store.WorkDone, w.State)
	}
}

func TestSubmitRefusesBadRequests(t *testing.T) {
	t.Parallel()
	rec := chattest.New()
	d, _, _ := newChatDispatcher(t, rec)
	_, err := d.Submit(t.Context(), Request{Runbook: "stuck-wroker", Source: store.TriggerSchedule})
	var unknown *UnknownRunbookError
	require.ErrorAs(t, err, &unknown)
	require.Equal(t, "stuck-worker", unknown.Suggestion)
	_, err = d.Submit(t.Context(), Request{Runbook: "stuck-worker", Params: map[string]string{"host": "here"}, Source: store.TriggerSchedule})
	var pe *runbooks.ParamError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, "dir", pe.Param)
	_, err = d.Submit(t.Context(), Request{Runbook: "stuck-worker", Params: map[string]string{"host": "here", "dir": "/x"}, Source: "carrier-pigeon"})
	require.ErrorContains(t, err, "invalid source")
	require.NoError(t, d.Idle(t.Context()))
	require.Zero(t, rec.Calls())
}

// Work queued before a restart runs when the workers start.
func TestQueuedWorkRunsAfterRestart(t *testing.T) {
	t.Parallel()
	rec := chattest.New()
	d, st, dir := newChatDispatcher(t, rec)
	_, created, err := st.Enqueue(t.Context(), store.Work{
		Key: "schedule:stuck-worker:0900", Trigger: store.TriggerSchedule, Runbook: "stuck-worker",
		Params: map[string]string{"host": "here", "dir": dir}, RequestedBy: "schedule",
	})
	require.NoError(t, err)
	require.True(t, created)
	require.NoError(t, d.Resume(t.Context()))
	ctx, cancel := context.WithTimeoutCause(t.Context(), 30*time.Second, errors.New("the queued work never posted"))
	defer cancel()
	require.NoError(t, rec.Wait(ctx, func(posts []chattest.Post) bool { return len(posts) > 0 }))
	require.NoError(t, d.Idle(t.Context()))
	runs, err := st.ListRuns(t.Context(), store.RunFilter{})
	require.NoError(t, err)
	require.Len(t, runs, 1)
	require.Equal(t, store.TriggerSchedule, runs[0].Trigger)
	require.Equal(t, opsChan, runs[0].Message.Channel, "runs without a channel go to the configured one")
}

func TestShutdownRefusesNewWork(t *testing.T) {
	t.Parallel()
	d, _, dir := newChatDispatcher(t, chattest.New())
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	require.NoError(t, d.Shutdown(ctx))
	_, err := d.Submit(t.Context(), Request{Runbook: "stuck-worker", Params: map[string]string{"host": "here", "dir": dir}, Source: store.TriggerSchedule})
	require.ErrorIs(t, err, ErrShuttingDown, "%v", err)
	require.ErrorContains(t, err, "queued as", "the request is kept for the next start")
}

// When the run's message cannot be posted, the run still happens and the
// requester is told why, privately, at the reply target their command
// carried.
func TestRunGoesOnWhenChannelRefusesThePost(t *testing.T) {
	t.Parallel()
	rec := chattest.New()
	d, st, dir := newChatDispatcher(t, rec)
	rec.FailNext(chattest.OpPost, errors.New("not_in_channel"))
	_, err := d.Submit(t.Context(), Request{
		Key: "command:1", Runbook: "stuck-worker", Params: map[string]string{"host": "here", "dir": dir},
		RequestedBy: "U0REQ", Source: store.TriggerChat, Channel: "C0ELSE", ReplyTo: "reply-1",
	})
	require.NoError(t, err)
	require.NoError(t, d.Idle(t.Context()))
	runs, err := st.ListRuns(t.Context(), store.RunFilter{})
	require.NoError(t, err)
	require.Len(t, runs, 1)
	require.Equal(t, store.RunFinished, runs[0].Status)
	require.Nil(t, runs[0].Message)
	told := rec.Replies()
	require.Len(t, told, 1)
	require.Equal(t, "reply-1", told[0].To.ReplyTo)
	require.Contains(t, told[0].Message.Text(), "not_in_channel")
	require.Empty(t, rec.Posts(), "nothing to update")
}
