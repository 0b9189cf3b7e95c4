package dispatch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/chat"
	"github.com/runbot/runbot/chat/chattest"
	"github.com/runbot/runbot/internal/syncbuf"
	"github.com/runbot/runbot/runbooks/record"
	"github.com/runbot/runbot/store"
)

// deadOwner names a process that no longer exists (another host's, which
// the store treats as gone): what a crashed runbot leaves on its rows.
const deadOwner = "crashed-host/4242/1"

// requester asks for the runs of these tests.
const requester = "U0REQ"

// postOf is the message posted with id, with its updates.
func postOf(t *testing.T, rec *chattest.Recorder, id string) chattest.Post {
	t.Helper()
	for _, p := range rec.Posts() {
		if p.Ref.ID == id {
			return p
		}
	}
	t.Fatalf("no message %s", id)
	return chattest.Post{}
}

// A run longer than every deadline runbot sets itself for recording (the
// step sleeps past the 30 s that recording a run's end may take) ends done:
// its report is stored, its work is done and its message shows the result.
// Before, the record deadline started with the run and had passed by the
// time the run ended, so none of this happened.
func TestRunLongerThanTheRecordDeadlineEndsDone(t *testing.T) {
	t.Parallel()
	rec := chattest.New()
	logs := &syncbuf.Buffer{}
	d, st, _ := newChatDispatcherWith(t, rec, testSetup{runbooks: "testdata/long", logs: logs})
	_, err := d.Submit(t.Context(), Request{Runbook: "long-sleep", Params: map[string]string{"host": "here"}, RequestedBy: requester, Source: store.TriggerChat})
	require.NoError(t, err)
	require.NoError(t, d.Idle(t.Context()))

	runs, err := st.ListRuns(t.Context(), store.RunFilter{})
	require.NoError(t, err)
	require.Len(t, runs, 1)
	run := runs[0]
	require.Equal(t, store.RunFinished, run.Status, logs.String())
	require.Equal(t, store.OutcomeOK, run.Outcome)
	require.NotEmpty(t, run.Report, "the report is stored")
	require.Greater(t, run.FinishedAt.Sub(run.StartedAt), record.WriteTimeout, "the run outlasted the record deadline")
	w, err := st.GetWork(t.Context(), run.WorkID)
	require.NoError(t, err)
	require.Equal(t, store.WorkDone, w.State)

	require.NotNil(t, run.Message)
	p := postOf(t, rec, run.Message.ID)
	require.NotEmpty(t, p.Updates, "the run's message was brought up to date")
	final := p.Last().Text()
	require.Contains(t, final, "Slept past the record deadline.")
	require.Contains(t, final, "1 of 1 step runs completed.")
	require.NotContains(t, final, "running")
	require.NotContains(t, logs.String(), "deadline exceeded")
	require.Len(t, rec.Posts(), 1, "one post; the rest are updates")
}

// After a restart, recovery brings the messages of what the dead process
// left up to date: an interrupted plan no longer looks like it is applying
// and says it needs a new approval; an interrupted run says it was cut
// short and which attempt runs next. Nothing is posted anew; the requeued
// work then runs once more in a message that says which attempt it is.
func TestRecoveryUpdatesMessagesOfInterruptedPlansAndRuns(t *testing.T) {
	t.Parallel()
	rec := chattest.New()
	d, st, dir := newChatDispatcher(t, rec)
	ctx := t.Context()

	// A plan that was applying: approved by two, its action started.
	_, err := d.Submit(ctx, Request{Runbook: "stuck-worker", Params: map[string]string{"host": "here", "dir": dir}, RequestedBy: requester, Source: store.TriggerChat})
	require.NoError(t, err)
	require.NoError(t, d.Idle(ctx))
	runs, err := st.ListRuns(ctx, store.RunFilter{})
	require.NoError(t, err)
	require.Len(t, runs, 1)
	planRun := runs[0]
	planOf := func() store.Plan {
		plans, err := st.ListPlans(ctx, store.PlanFilter{RunID: planRun.ID})
		require.NoError(t, err)
		require.Len(t, plans, 1)
		return plans[0]
	}
	plan := planOf()
	for _, u := range []string{"U0AAA", "U0BBB"} {
		_, err := st.RecordApproval(ctx, store.Approval{PlanID: plan.ID, User: u, Decision: store.Approve, PlanHash: plan.Hash})
		require.NoError(t, err)
	}
	_, err = st.TransitionPlan(ctx, store.Transition{PlanID: plan.ID, From: store.PlanApproved, To: store.PlanApplying, Actor: "U0BBB"})
	require.NoError(t, err)
	_, err = st.StartAction(ctx, store.ActionRecord{PlanID: plan.ID, Index: 0, Target: "host/here", Action: "command"})
	require.NoError(t, err)

	// A run in progress: its work claimed, its message posted.
	_, _, err = st.Enqueue(ctx, store.Work{Trigger: store.TriggerChat, Runbook: "stuck-worker", RequestedBy: requester,
		Params: map[string]string{"host": "here", "dir": dir}})
	require.NoError(t, err)
	w, err := st.ClaimWork(ctx)
	require.NoError(t, err)
	cut, err := st.CreateRun(ctx, store.Run{Runbook: "stuck-worker", Trigger: store.TriggerChat, RequestedBy: requester,
		Params: w.Params, WorkID: w.ID})
	require.NoError(t, err)
	cutRef, err := rec.Post(ctx, opsChan, "", chat.Message{Title: "Stuck worker", Status: chat.StatusRunning})
	require.NoError(t, err)
	require.NoError(t, st.SetRunMessage(ctx, cut.ID, store.MessageRef(cutRef)))

	// The process that held them dies.
	for table, id := range map[string]string{"plans": plan.ID, "runs": cut.ID, "work": w.ID} {
		_, err := st.DB().ExecContext(ctx, `UPDATE `+table+` SET owner = ? WHERE id = ?`, deadOwner, id)
		require.NoError(t, err)
	}
	posts := len(rec.Posts())
	planUpdates := len(postOf(t, rec, planRun.Message.ID).Updates)

	recovery, err := st.MarkInterrupted(ctx)
	require.NoError(t, err)
	require.Equal(t, store.Recovery{Runs: []string{cut.ID}, Plans: []string{plan.ID}, Requeued: []string{w.ID}}, recovery)
	d.ShowRecovered(ctx, recovery)
	require.NoError(t, d.Idle(ctx))

	planPost := postOf(t, rec, planRun.Message.ID)
	require.Greater(t, len(planPost.Updates), planUpdates, "the plan's message was updated")
	planMsg := planPost.Last()
	for _, want := range []string{
		"Remediation: interrupted",
		"interrupted: the runbot process carrying it stopped (restarted, crashed, or a replica lost) while applying it; not re-applied, a new approval is needed",
		"command on host/here: started (it may or may not have taken effect)",
		"Plan is interrupted",
	} {
		require.Contains(t, planMsg.Text(), want)
	}
	require.NotContains(t, planMsg.Text(), "Remediation: applying")
	require.Empty(t, planMsg.Buttons, "nothing to approve on an interrupted plan")

	cutPost := postOf(t, rec, cutRef.ID)
	require.NotEmpty(t, cutPost.Updates)
	require.Contains(t, cutPost.Last().Text(), "interrupted: the runbot process carrying it stopped (restarted, crashed, or a replica lost) while this run was in progress, before its report was stored. It runs again as attempt 2 of 3, in a new message.")
	require.Len(t, rec.Posts(), posts, "recovery updates messages; it posts none")

	// The workers start: the requeued work runs once more and says so.
	require.NoError(t, d.Resume(ctx))
	require.NoError(t, d.Idle(ctx))
	all := rec.Posts()
	require.Len(t, all, posts+1)
	require.Contains(t, all[len(all)-1].Message.Text(), "Attempt 2 of 3: the previous attempt (run "+cut.ID+") was cut short when the runbot process running it stopped")
	got, err := st.GetWork(ctx, w.ID)
	require.NoError(t, err)
	require.Equal(t, store.WorkDone, got.State)
	require.NotEqual(t, cut.ID, got.RunID)
	again, err := st.GetRun(ctx, got.RunID)
	require.NoError(t, err)
	require.Equal(t, store.RunFinished, again.Status)
	require.Equal(t, store.PlanInterrupted, planOf().State, "never applied again")
	applied, err := os.ReadFile(filepath.Join(dir, "applied.log"))
	require.True(t, os.IsNotExist(err) || !strings.Contains(string(applied), "restarted"), "never applied")
}
