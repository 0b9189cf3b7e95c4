package bot

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/bot/slackrec"
	"github.com/runbot/runbot/chat"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/store"
)

// deadOwner names a process that no longer exists (another host's, which
// the store treats as gone): what a crashed runbot leaves on its rows.
const deadOwner = "crashed-host/4242/1"

// lastUpdate is the newest chat.update of the message at ts, if any.
func (h *harness) lastUpdate(ts string) (slackrec.Call, bool) {
	var last slackrec.Call
	found := false
	for _, c := range h.rec.Calls("chat.update") {
		if c.Status == http.StatusOK && c.Form.Get("ts") == ts {
			last, found = c, true
		}
	}
	return last, found
}

// A run longer than every deadline runbot sets itself for recording (the
// step sleeps past the 30 s that recording a run's end may take) ends done:
// its report is stored, its work is done and its message shows the result.
// Before, the record deadline started with the run and had passed by the
// time the run ended, so none of this happened.
func TestRunLongerThanTheRecordDeadlineEndsDone(t *testing.T) {
	t.Parallel()
	h := newHarnessWith(t, "testdata/long")
	require.Contains(t, replyText(t, h.command(requester, "long here")), "Starting long-sleep")
	h.idle()

	runs, err := h.store.ListRuns(t.Context(), store.RunFilter{})
	require.NoError(t, err)
	require.Len(t, runs, 1)
	run := runs[0]
	require.Equal(t, store.RunFinished, run.Status, h.logs.String())
	require.Equal(t, store.OutcomeOK, run.Outcome)
	require.NotEmpty(t, run.Report, "the report is stored")
	require.Greater(t, run.FinishedAt.Sub(run.StartedAt), runbooks.RecordTimeout, "the run outlasted the record deadline")
	w, err := h.store.GetWork(t.Context(), run.WorkID)
	require.NoError(t, err)
	require.Equal(t, store.WorkDone, w.State)

	require.NotNil(t, run.Message)
	final, ok := h.lastUpdate(run.Message.ID)
	require.True(t, ok, "the run's message was brought up to date")
	require.Contains(t, final.Text(), "Slept past the record deadline.")
	require.Contains(t, final.Text(), "1 of 1 step runs completed.")
	require.NotContains(t, final.Text(), "running")
	require.NotContains(t, h.logs.String(), "deadline exceeded")
	require.Len(t, h.rec.Calls("chat.postMessage"), 1, "one post; the rest are updates")
}

// After a restart, recovery brings the messages of what the dead process
// left up to date: an interrupted plan no longer looks like it is applying
// and says it needs a new approval; an interrupted run says it was cut
// short and which attempt runs next. Nothing is posted anew; the requeued
// work then runs once more in a message that says which attempt it is.
func TestRecoveryUpdatesMessagesOfInterruptedPlansAndRuns(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := t.Context()

	// A plan that was applying: approved by two, its action started.
	planRun, planTS := h.runOnce("")
	plan := h.planOf(planRun.ID)
	for _, u := range []string{approverA, approverB} {
		_, err := h.store.RecordApproval(ctx, store.Approval{PlanID: plan.ID, User: u, Decision: store.Approve, PlanHash: plan.Hash})
		require.NoError(t, err)
	}
	_, err := h.store.TransitionPlan(ctx, store.Transition{PlanID: plan.ID, From: store.PlanApproved, To: store.PlanApplying, Actor: approverB})
	require.NoError(t, err)
	_, err = h.store.StartAction(ctx, store.ActionRecord{PlanID: plan.ID, Index: 0, Target: "host/here", Action: "command"})
	require.NoError(t, err)

	// A run in progress: its work claimed, its message posted.
	_, _, err = h.store.Enqueue(ctx, store.Work{Trigger: store.TriggerSlack, Runbook: "stuck-worker", RequestedBy: requester,
		Params: map[string]string{"host": "here", "dir": h.dir}})
	require.NoError(t, err)
	w, err := h.store.ClaimWork(ctx)
	require.NoError(t, err)
	cut, err := h.store.CreateRun(ctx, store.Run{Runbook: "stuck-worker", Trigger: store.TriggerSlack, RequestedBy: requester,
		Params: w.Params, WorkID: w.ID})
	require.NoError(t, err)
	cutRef, err := h.disp.Chat().Post(ctx, opsChan, "", chat.Message{Title: "Stuck worker", Status: chat.StatusRunning})
	require.NoError(t, err)
	require.NoError(t, h.store.SetRunMessage(ctx, cut.ID, cutRef))

	// The process that held them dies.
	for table, id := range map[string]string{"plans": plan.ID, "runs": cut.ID, "work": w.ID} {
		_, err := h.store.DB().ExecContext(ctx, `UPDATE `+table+` SET owner = ? WHERE id = ?`, deadOwner, id)
		require.NoError(t, err)
	}
	posts := len(h.rec.Calls("chat.postMessage"))

	rec, err := h.store.MarkInterrupted(ctx)
	require.NoError(t, err)
	require.Equal(t, store.Recovery{Runs: []string{cut.ID}, Plans: []string{plan.ID}, Requeued: []string{w.ID}}, rec)
	h.disp.ShowRecovered(ctx, rec)
	h.idle()

	planMsg, ok := h.lastUpdate(planTS)
	require.True(t, ok)
	for _, want := range []string{
		"Remediation: interrupted",
		"interrupted: runbot restarted while applying it; not re-applied, a new approval is needed",
		"command on host/here: started (it may or may not have taken effect)",
		"Plan is interrupted",
	} {
		require.Contains(t, planMsg.Text(), want)
	}
	require.NotContains(t, planMsg.Text(), "Remediation: applying")
	require.False(t, hasButtons(planMsg), "nothing to approve on an interrupted plan")

	cutMsg, ok := h.lastUpdate(cutRef.ID)
	require.True(t, ok)
	require.Contains(t, cutMsg.Text(), "interrupted: runbot restarted while this run was in progress, before its report was stored. It runs again as attempt 2 of 3, in a new message.")
	require.Len(t, h.rec.Calls("chat.postMessage"), posts, "recovery updates messages; it posts none")

	// The workers start: the requeued work runs once more and says so.
	require.NoError(t, h.disp.Resume(ctx))
	h.idle()
	all := h.rec.Calls("chat.postMessage")
	require.Len(t, all, posts+1)
	require.Contains(t, all[len(all)-1].Text(), "Attempt 2 of 3: runbot restarted while the previous attempt (run "+cut.ID+") was in progress")
	got, err := h.store.GetWork(ctx, w.ID)
	require.NoError(t, err)
	require.Equal(t, store.WorkDone, got.State)
	require.NotEqual(t, cut.ID, got.RunID)
	again, err := h.store.GetRun(ctx, got.RunID)
	require.NoError(t, err)
	require.Equal(t, store.RunFinished, again.Status)
	require.Equal(t, store.PlanInterrupted, h.planOf(planRun.ID).State, "never applied again")
	require.Zero(t, h.appliedCount())
}
