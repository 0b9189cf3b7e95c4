package slackchat

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/runview"
	"github.com/runbot/runbot/store"
)

// A slash command over Slack's HTTP transport, end to end: signed,
// answered, run, and its message posted and kept up to date in Block Kit
// with the approval buttons.
func TestSlashCommandRunsRunbookAndPostsDiagnosis(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	run, ts := h.runOnce("")

	require.Equal(t, store.RunFinished, run.Status)
	require.Equal(t, store.OutcomeCritical, run.Outcome)
	require.Equal(t, requester, run.RequestedBy)
	require.Equal(t, store.TriggerChat, run.Trigger)
	require.Equal(t, opsChan, run.Message.Channel)

	posts := h.rec.Calls("chat.postMessage")
	require.Len(t, posts, 1)
	require.Equal(t, opsChan, posts[0].Form.Get("channel"))
	require.Equal(t, botToken, posts[0].Form.Get("token"))
	first := posts[0].Text()
	require.Contains(t, first, ":hourglass_flowing_sand: Stuck worker")
	require.Contains(t, first, run.ID)

	final := h.lastMessage(ts)
	text := final.Text()
	for _, want := range []string{
		":red_circle: Stuck worker",
		"Diagnosis: The worker is wedged while its health check passes; a restart clears it.",
		"Health says 200 but the worker made no progress for 600s.",
		// Evidence is plain text: its backticks show as look-alikes, as
		// any value's do, not as a code span.
		"[health@host] ˋecho status=200ˋ exited 0",
		"[progress@host] gap = 600",
		"Proposed remediation: restart on host/here",
		"needs 2 approval(s) from @oncall; two-person rule",
		"<@" + requester + ">",
	} {
		require.Contains(t, text, want)
	}
	value := buttonValue(t, final, runview.ActionApprove)
	plans, err := h.store.ListPlans(t.Context(), store.PlanFilter{RunID: run.ID})
	require.NoError(t, err)
	require.Len(t, plans, 1)
	require.Equal(t, store.PlanProposed, plans[0].State)
	require.Equal(t, plans[0].ID+"|"+plans[0].Hash, value, "the button carries the plan id and the hash shown")
	require.Equal(t, value, buttonValue(t, final, runview.ActionDeny))
	require.Equal(t, value, buttonValue(t, final, runview.ActionDryRun))
	require.LessOrEqual(t, len(final.Blocks()), maxBlocks)
	require.Zero(t, h.appliedCount(), "nothing is applied without approval")
}
