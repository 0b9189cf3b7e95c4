package commands

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/runview"
	"github.com/runbot/runbot/store"
)

// planOf returns the run's only plan.
func (h *harness) planOf(runID string) store.Plan {
	h.t.Helper()
	plans, err := h.store.ListPlans(h.t.Context(), store.PlanFilter{RunID: runID})
	require.NoError(h.t, err)
	require.Len(h.t, plans, 1)
	return plans[0]
}

func TestApprovalByAllowedPeopleAppliesAndVerifies(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	run, ts := h.runOnce("")
	value := buttonValue(t, h.lastMessage(ts), runview.ActionApprove)

	// The requester may not approve under the two-person rule.
	h.click(requester, runview.ActionApprove, value, ts)
	h.idle()
	require.Len(t, h.repliesTo(requester), 1)
	require.Contains(t, h.repliesTo(requester)[0], "two-person rule")
	require.Equal(t, store.PlanProposed, h.planOf(run.ID).State)

	// A stranger may not approve at all.
	h.click(stranger, runview.ActionApprove, value, ts)
	h.idle()
	require.Len(t, h.repliesTo(stranger), 1)
	require.Contains(t, h.repliesTo(stranger)[0], "You are not an approver of this remediation (approvers: @oncall)")
	require.Equal(t, store.PlanProposed, h.planOf(run.ID).State)
	approvals, err := h.store.Approvals(t.Context(), h.planOf(run.ID).ID)
	require.NoError(t, err)
	require.Empty(t, approvals, "refused votes are not counted")

	// The first approver's vote counts, and the message says so.
	h.click(approverA, runview.ActionApprove, value, ts)
	h.idle()
	require.Contains(t, strings.Join(h.repliesTo(approverA), "\n"), "Approval recorded (1 of 2 needed)")
	msg := h.lastMessage(ts).Text()
	require.Contains(t, msg, "Approved (1 of 2) by @"+approverA)
	require.True(t, hasButtons(h.lastMessage(ts)), "still waiting for a second approver")
	require.Zero(t, h.appliedCount())

	// The second approver settles it; the remediation runs and is verified.
	h.click(approverB, runview.ActionApprove, value, ts)
	h.idle()
	require.Equal(t, 1, h.appliedCount())
	plan := h.planOf(run.ID)
	require.Equal(t, store.PlanDone, plan.State)
	final := h.lastMessage(ts)
	require.False(t, hasButtons(final), "no buttons once the plan is decided")
	text := final.Text()
	for _, want := range []string{
		"Approved (2 of 2) by @" + approverA + " @" + approverB,
		"Remediation: done",
		"precheck: re-running stuck-worker",
		"action: run on host@here: touch",
		"verify: re-running progress",
		"verified: the symptom is gone",
	} {
		require.Contains(t, text, want)
	}

	// The updates showed the apply's progress before its outcome.
	sawApplying := false
	for _, p := range h.rec.Posts() {
		for _, u := range p.Updates {
			if strings.Contains(u.Text(), "Remediation: applying") {
				sawApplying = true
			}
		}
	}
	require.True(t, sawApplying, "the message showed live apply progress")
}

// TestVoteIsRecordedBeforeTheClickReturns: the platform acknowledges a
// click when Click returns, so by then the vote must be in the store; a
// replica that dies right after must not lose an approval the voter was
// told arrived. Nothing waits for the background work here.
func TestVoteIsRecordedBeforeTheClickReturns(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	run, ts := h.runOnce("")
	plan := h.planOf(run.ID)
	value := buttonValue(t, h.lastMessage(ts), runview.ActionApprove)

	h.click(approverA, runview.ActionApprove, value, ts)
	approvals, err := h.store.Approvals(t.Context(), plan.ID)
	require.NoError(t, err)
	require.Len(t, approvals, 1, "the vote is recorded when the click is acknowledged")
	require.Equal(t, approverA, approvals[0].User)
	require.Equal(t, store.Approve, approvals[0].Decision)

	// The settling vote is recorded at once too: the plan is approved in
	// the store before its apply, a background task, begins.
	h.click(approverB, runview.ActionApprove, value, ts)
	approvals, err = h.store.Approvals(t.Context(), plan.ID)
	require.NoError(t, err)
	require.Len(t, approvals, 2)
	require.NotEqual(t, store.PlanProposed, h.planOf(run.ID).State)
	h.idle()
	require.Equal(t, store.PlanDone, h.planOf(run.ID).State)
	require.Equal(t, 1, h.appliedCount())
}

func TestDoubleClickAppliesOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	run, ts := h.runOnce("")
	value := buttonValue(t, h.lastMessage(ts), runview.ActionApprove)
	h.click(approverA, runview.ActionApprove, value, ts)
	h.idle()

	// The settling approver clicks twice before either click is handled.
	h.click(approverB, runview.ActionApprove, value, ts)
	h.click(approverB, runview.ActionApprove, value, ts)
	h.idle()
	require.Equal(t, 1, h.appliedCount(), "applied exactly once")
	require.Equal(t, store.PlanDone, h.planOf(run.ID).State)
	// The extra click is told the plan is decided; it changed nothing.
	var refusals int
	for _, e := range h.repliesTo(approverB) {
		if strings.Contains(e, "votes are no longer taken") {
			refusals++
		}
	}
	require.Equal(t, 1, refusals)

	// A late click after the remediation changes nothing either.
	h.click(approverA, runview.ActionApprove, value, ts)
	h.idle()
	require.Equal(t, 1, h.appliedCount())
}

func TestDenyClosesThePlan(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	run, ts := h.runOnce("")
	value := buttonValue(t, h.lastMessage(ts), runview.ActionDeny)
	h.click(approverA, runview.ActionDeny, value, ts)
	h.idle()
	require.Equal(t, store.PlanDenied, h.planOf(run.ID).State)
	final := h.lastMessage(ts)
	require.False(t, hasButtons(final))
	require.Contains(t, final.Text(), "Denied by @"+approverA)

	h.click(approverB, runview.ActionApprove, value, ts)
	h.idle()
	require.Contains(t, strings.Join(h.repliesTo(approverB), "\n"), "This plan is denied")
	require.Zero(t, h.appliedCount())
}

func TestStaleHashIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	run, ts := h.runOnce("")
	plan := h.planOf(run.ID)
	h.click(approverA, runview.ActionApprove, plan.ID+"|"+strings.Repeat("0", 64), ts)
	h.idle()
	require.Contains(t, strings.Join(h.repliesTo(approverA), "\n"), "This plan changed since it was shown to you")
	require.Equal(t, store.PlanProposed, h.planOf(run.ID).State)
}

func TestDryRunShowsThePlanToApproversOnly(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) {
		// Only the requester may run it; approvers come from the runbook.
		c.Access = []AccessRule{{Runbooks: []string{"stuck-worker"}, Users: []string{requester}}}
	})
	run, ts := h.runOnce("")
	value := buttonValue(t, h.lastMessage(ts), runview.ActionDryRun)

	h.click(approverA, runview.ActionDryRun, value, ts)
	h.idle()
	got := h.repliesTo(approverA)
	require.Len(t, got, 1)
	require.Contains(t, got[0], "Dry run: restart on host/here")
	require.Contains(t, got[0], "touch "+h.dir+"/fixed && echo restarted >> "+h.dir+"/applied.log")
	require.Contains(t, got[0], "Nothing was changed")
	require.NotContains(t, got[0], "Re-check", "the targets did not change")

	h.click(stranger, runview.ActionDryRun, value, ts)
	h.idle()
	require.Contains(t, strings.Join(h.repliesTo(stranger), "\n"), "Only people who may run stuck-worker or approve this plan")
	require.Zero(t, h.appliedCount())
	require.Equal(t, store.PlanProposed, h.planOf(run.ID).State)
}

// When a plan's approval window closes, its message says so and loses its
// buttons without anyone clicking; a late click is refused and changes
// nothing.
func TestExpiredPlanLosesItsButtons(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	run, ts := h.runOnce("")
	value := buttonValue(t, h.lastMessage(ts), runview.ActionApprove)
	require.True(t, hasButtons(h.lastMessage(ts)))
	plan := h.planOf(run.ID)

	// The window closes: move its end into the past, as time would.
	_, err := h.store.DB().ExecContext(t.Context(), `UPDATE plans SET expires_at = ? WHERE id = ?`, time.Now().Add(-time.Second).UnixNano(), plan.ID)
	require.NoError(t, err)
	expired, err := h.store.ExpirePlans(t.Context())
	require.NoError(t, err)
	require.Len(t, expired, 1)
	h.disp.ShowExpired(expired)
	h.idle()

	final := h.lastMessage(ts)
	require.False(t, hasButtons(final), "no Approve button on a plan that can no longer run")
	require.Contains(t, final.Text(), "Plan is expired")

	h.click(approverA, runview.ActionApprove, value, ts)
	h.idle()
	require.Contains(t, strings.Join(h.repliesTo(approverA), "\n"), "expired")
	require.Equal(t, store.PlanExpired, h.planOf(run.ID).State)
	require.Zero(t, h.appliedCount())
}
