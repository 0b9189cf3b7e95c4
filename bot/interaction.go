package bot

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/runbot/runbot/chat"
	"github.com/runbot/runbot/dispatch"
	"github.com/runbot/runbot/store"
)

// dryRunTimeout bounds a dry run, which reads the targets' current state.
const dryRunTimeout = 2 * time.Minute

// click is one press of one of runbot's buttons.
type click struct {
	user        string
	channel     string
	responseURL string
	planID      string
	hash        string
}

// interaction handles a block_actions payload after it was acknowledged:
// each click of runbot's buttons becomes a background task. A redelivered
// click (same action_ts) is handled once.
func (b *Bot) interaction(cb slack.InteractionCallback) {
	if cb.Type != slack.InteractionTypeBlockActions {
		b.log.Debug("interaction ignored", "type", cb.Type)
		return
	}
	channel := cb.Container.ChannelID
	if channel == "" {
		channel = cb.Channel.ID
	}
	for _, a := range cb.ActionCallback.BlockActions {
		if a.ActionID != dispatch.ActionApprove && a.ActionID != dispatch.ActionDeny && a.ActionID != dispatch.ActionDryRun {
			continue
		}
		if a.ActionTs != "" && !b.seen.first(cb.User.ID+"/"+a.ActionID+"/"+a.ActionTs) {
			b.log.Info("repeated click ignored", "user", cb.User.ID, "action", a.ActionID, "action_ts", a.ActionTs)
			continue
		}
		planID, hash, _ := strings.Cut(a.Value, "|")
		c := click{user: cb.User.ID, channel: channel, responseURL: cb.ResponseURL, planID: planID, hash: hash}
		b.log.Info("button clicked", "user", c.user, "action", a.ActionID, "plan", planID)
		var err error
		switch a.ActionID {
		case dispatch.ActionDryRun:
			err = b.disp.Go("dry run", dryRunTimeout, func(ctx context.Context) { b.dryRun(ctx, c) })
		default:
			approve := a.ActionID == dispatch.ActionApprove
			err = b.disp.Go("vote", b.cfg.ApplyTimeout, func(ctx context.Context) { b.vote(ctx, c, approve) })
		}
		if err != nil {
			b.log.Warn("click not handled", "action", a.ActionID, "err", err)
		}
	}
}

// vote records an Approve or Deny and tells the voter when it did not
// count or what it changed; the run's message shows the rest.
func (b *Bot) vote(ctx context.Context, c click, approve bool) {
	res, err := b.disp.Vote(ctx, Vote{PlanID: c.planID, Hash: c.hash, User: c.user, Approve: approve})
	switch {
	case err != nil:
		b.log.Error("vote not recorded", "plan", c.planID, "user", c.user, "err", err)
		b.tell(ctx, c, errorReply("Your vote could not be recorded: "+err.Error()))
	case res.Refusal != "":
		b.log.Info("vote refused", "plan", c.planID, "user", c.user, "reason", res.Refusal)
		b.tell(ctx, c, Message{Title: "Vote not counted", Status: StatusDenied, Sections: []Section{{Text: res.Refusal}}})
	case approve && res.State == store.PlanProposed:
		b.tell(ctx, c, Message{Title: fmt.Sprintf("Approval recorded (%d of %d needed)", res.Approvals, res.Needed), Status: StatusApproved})
	}
}

// dryRun shows the clicker, and only them, what the plan would change. It
// is for people who may run the runbook or approve the plan.
func (b *Bot) dryRun(ctx context.Context, c click) {
	plan, err := b.store.GetPlan(ctx, c.planID)
	if err != nil {
		b.tell(ctx, c, errorReply("This plan no longer exists."))
		return
	}
	run, err := b.store.GetRun(ctx, plan.RunID)
	if err != nil {
		b.tell(ctx, c, errorReply("Could not read the plan's run: "+err.Error()))
		return
	}
	mayRun, err := b.access.allowed(ctx, run.Runbook, c.user, c.channel)
	mayApprove := false
	if err == nil && !mayRun {
		mayApprove, err = b.disp.MayApprove(ctx, plan.Policy.Approvers, c.user)
	}
	if err != nil || (!mayRun && !mayApprove) {
		b.log.Info("dry run refused", "plan", c.planID, "user", c.user, "err", err)
		b.tell(ctx, c, errorReply("Only people who may run "+run.Runbook+" or approve this plan can see its dry run."))
		return
	}
	m, err := b.disp.DryRun(ctx, c.planID)
	if err != nil {
		b.tell(ctx, c, errorReply("Dry run failed: "+err.Error()))
		return
	}
	b.tell(ctx, c, m)
}

// tell shows the clicker an ephemeral message: through chat.postEphemeral,
// or the click's response_url when that fails.
func (b *Bot) tell(ctx context.Context, c click, m Message) {
	if err := b.slack.Reply(ctx, chat.Recipient{User: c.user, Channel: c.channel, ReplyTo: c.responseURL}, m); err != nil {
		b.log.Warn("reply to a click failed", "user", c.user, "err", err)
	}
}
