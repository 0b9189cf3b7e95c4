package bot

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/bot/slackrec"
	"github.com/runbot/runbot/dispatch"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/store"
)

// An alert's run goes into the alert message's thread, once per key.
func TestSubmitFromAlertPostsInThreadOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	d := h.bot.Dispatcher()
	req := Request{
		Key: "alert:abcc45788bcf7aa8:1", Runbook: "stuck-worker", Params: map[string]string{"host": "here", "dir": h.dir},
		RequestedBy: "alertmanager", Source: store.TriggerAlert, Channel: "C0ALERTS", Thread: "1700000000.000001",
		Payload: []byte(`{"fingerprint":"abcc45788bcf7aa8"}`),
	}
	acc, err := d.Submit(t.Context(), req)
	require.NoError(t, err)
	require.False(t, acc.Duplicate)
	h.idle()
	again, err := d.Submit(t.Context(), req)
	require.NoError(t, err)
	require.True(t, again.Duplicate)
	require.Equal(t, acc.WorkID, again.WorkID)
	require.NotEmpty(t, again.RunID, "the duplicate names the run the first one started")
	h.idle()

	posts := h.rec.Calls("chat.postMessage")
	require.Len(t, posts, 1)
	require.Equal(t, "C0ALERTS", posts[0].Form.Get("channel"))
	require.Equal(t, "1700000000.000001", posts[0].Form.Get("thread_ts"))
	final := h.lastMessage(h.lastTS(t))
	require.Contains(t, final.Text(), "*Trigger:* alert alertmanager")
	run, err := h.store.GetRun(t.Context(), again.RunID)
	require.NoError(t, err)
	require.Equal(t, store.TriggerAlert, run.Trigger)
	require.Equal(t, acc.WorkID, run.WorkID)
	work, err := h.store.GetWork(t.Context(), acc.WorkID)
	require.NoError(t, err)
	require.Equal(t, store.WorkDone, work.State)
}

func (h *harness) lastTS(t *testing.T) string {
	posts := h.rec.Calls("chat.postMessage")
	require.NotEmpty(t, posts)
	runs, err := h.store.ListRuns(t.Context(), store.RunFilter{Limit: 1})
	require.NoError(t, err)
	require.NotNil(t, runs[0].Message)
	return runs[0].Message.ID
}

func TestSubmitRefusesBadRequests(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	d := h.bot.Dispatcher()
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
	h.idle()
	require.Empty(t, h.rec.Calls())
}

// Work queued before a restart runs when the bot starts.
func TestQueuedWorkRunsAfterRestart(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	_, created, err := h.store.Enqueue(t.Context(), store.Work{
		Key: "schedule:stuck-worker:0900", Trigger: store.TriggerSchedule, Runbook: "stuck-worker",
		Params: map[string]string{"host": "here", "dir": h.dir}, RequestedBy: "schedule",
	})
	require.NoError(t, err)
	require.True(t, created)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- h.bot.Run(ctx) }()
	_, err = h.rec.WaitTimeout(30*time.Second, func(calls []slackrec.Call) bool { return len(calls) > 0 })
	require.NoError(t, err)
	h.idle()
	cancel()
	require.NoError(t, <-done)
	runs, err := h.store.ListRuns(t.Context(), store.RunFilter{})
	require.NoError(t, err)
	require.Len(t, runs, 1)
	require.Equal(t, store.TriggerSchedule, runs[0].Trigger)
	require.Equal(t, opsChan, runs[0].Message.Channel, "runs without a channel go to the configured one")
}

// When the run's message cannot be posted, the run still happens and the
// requester is told why through the command's response_url.
func TestRunGoesOnWhenChannelRefusesThePost(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.rec.FailNext("chat.postMessage", slackrec.Failure{Error: "not_in_channel"})
	h.command(requester, "stuck here "+h.dir)
	h.idle()
	runs, err := h.store.ListRuns(t.Context(), store.RunFilter{})
	require.NoError(t, err)
	require.Len(t, runs, 1)
	require.Equal(t, store.RunFinished, runs[0].Status)
	require.Nil(t, runs[0].Message)
	told := h.rec.Calls("response_url")
	require.Len(t, told, 1)
	require.Contains(t, told[0].Text(), "not_in_channel")
	require.Contains(t, string(told[0].Body), `"response_type":"ephemeral"`)
	require.Empty(t, h.rec.Calls("chat.update"))
}

func TestShutdownRefusesNewWork(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	require.NoError(t, h.bot.Shutdown(ctx))
	_, err := h.bot.Dispatcher().Submit(t.Context(), Request{Runbook: "stuck-worker", Params: map[string]string{"host": "here", "dir": h.dir}, Source: store.TriggerSchedule})
	require.True(t, errors.Is(err, dispatch.ErrShuttingDown), "%v", err)
	require.ErrorContains(t, err, "queued as", "the request is kept for the next start")
}
