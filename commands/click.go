package commands

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/runbot/runbot/chat"
	"github.com/runbot/runbot/dispatch"
	"github.com/runbot/runbot/runview"
	"github.com/runbot/runbot/store"
)

// dryRunTimeout bounds a dry run, which reads the targets' current state.
const dryRunTimeout = 2 * time.Minute

// voteRecordTimeout bounds recording a vote, which happens before the
// platform acknowledges the click (Slack waits 3 seconds).
const voteRecordTimeout = 2 * time.Second

// errVoteRecordSlow is the cause when recording a vote outlived it.
var errVoteRecordSlow = errors.New("recording the vote took longer than the chat platform waits for a click's answer")

// isOurs says whether a button is one of runbot's approval buttons.
func isOurs(action string) bool {
	return action == runview.ActionApprove || action == runview.ActionDeny || action == runview.ActionDryRun
}

// Click implements chat.Handler: a vote is recorded in the store before
// Click returns, and so before the platform acknowledges the click, so that
// a replica that dies right after cannot lose an approval it was told of;
// showing the vote, applying the plan it settled and a dry run are a
// background task. The buttons carry "plan id|plan hash", binding a vote
// to the plan the voter saw.
func (h *Handler) Click(ctx context.Context, c chat.Click) {
	if !isOurs(c.Action) {
		h.log.Debug("click ignored", "action", c.Action)
		return
	}
	planID, hash, _ := strings.Cut(c.Value, "|")
	h.log.Info("button clicked", "user", c.User, "action", c.Action, "plan", planID)
	var err error
	switch c.Action {
	case runview.ActionDryRun:
		err = h.disp.Go("dry run", dryRunTimeout, func(ctx context.Context) { h.dryRun(ctx, c, planID) })
	default:
		rctx, cancel := context.WithTimeoutCause(ctx, voteRecordTimeout, errVoteRecordSlow)
		rv := h.disp.RecordVote(rctx, dispatch.Vote{PlanID: planID, Hash: hash, User: c.User, Approve: c.Action == runview.ActionApprove})
		cancel()
		err = h.disp.Go("vote", h.disp.ApplyTimeout(), func(ctx context.Context) { h.vote(ctx, c, planID, rv) })
	}
	if err != nil {
		h.log.Warn("click not handled", "action", c.Action, "err", err)
	}
}

// vote finishes a recorded Approve or Deny and tells the voter when it did
// not count or what it changed; the run's message shows the rest.
func (h *Handler) vote(ctx context.Context, c chat.Click, planID string, rv dispatch.RecordedVote) {
	res, err := h.disp.FinishVote(ctx, rv)
	switch {
	case err != nil:
		h.log.Error("vote not recorded", "plan", planID, "user", c.User, "err", err)
		h.tell(ctx, c, errorReply("Your vote could not be recorded: "+err.Error()))
	case res.Refusal != "":
		h.log.Info("vote refused", "plan", planID, "user", c.User, "reason", res.Refusal)
		h.tell(ctx, c, chat.Message{Title: "Vote not counted", Status: chat.StatusDenied, Sections: []chat.Section{{Text: res.Refusal}}})
	case c.Action == runview.ActionApprove && res.State == store.PlanProposed:
		h.tell(ctx, c, chat.Message{Title: fmt.Sprintf("Approval recorded (%d of %d needed)", res.Approvals, res.Needed), Status: chat.StatusApproved})
	}
}

// dryRun shows the clicker, and only them, what the plan would change. It
// is for people who may run the runbook or approve the plan.
func (h *Handler) dryRun(ctx context.Context, c chat.Click, planID string) {
	plan, err := h.store.GetPlan(ctx, planID)
	if err != nil {
		h.tell(ctx, c, errorReply("This plan no longer exists."))
		return
	}
	run, err := h.store.GetRun(ctx, plan.RunID)
	if err != nil {
		h.tell(ctx, c, errorReply("Could not read the plan's run: "+err.Error()))
		return
	}
	mayRun, err := h.access.Load().allowed(ctx, run.Runbook, c.User, c.Channel)
	mayApprove := false
	if err == nil && !mayRun {
		mayApprove, err = h.disp.MayApprove(ctx, plan.Policy.Approvers, c.User)
	}
	if err != nil || (!mayRun && !mayApprove) {
		h.log.Info("dry run refused", "plan", planID, "user", c.User, "err", err)
		h.tell(ctx, c, errorReply("Only people who may run "+run.Runbook+" or approve this plan can see its dry run."))
		return
	}
	m, err := h.disp.DryRun(ctx, planID)
	if err != nil {
		h.tell(ctx, c, errorReply("Dry run failed: "+err.Error()))
		return
	}
	h.tell(ctx, c, m)
}

// tell shows the clicker, and only them, a message.
func (h *Handler) tell(ctx context.Context, c chat.Click, m chat.Message) {
	if h.replier == nil {
		h.log.Info("clicker not told: the chat cannot reply privately", "user", c.User, "message", m.Title)
		return
	}
	if err := h.replier.Reply(ctx, chat.Recipient{User: c.User, Channel: c.Channel, ReplyTo: c.ReplyTo}, m); err != nil {
		h.log.Warn("clicker not told", "user", c.User, "err", err)
	}
}
