package bot

import (
	"context"
	"errors"
	"fmt"

	"github.com/slack-go/slack"

	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/store"
)

// run checks that the user may run the runbook here, validates the params
// and queues the run. The reply says what happened; the run's message
// appears in the channel.
func (b *Bot) run(ctx context.Context, sc slack.SlashCommand, rb *runbooks.Runbook, words []string) Message {
	params, err := bindArgs(rb, words)
	if err != nil {
		return errorReply(fmt.Sprintf("%s: %v.", rb.Name, err), "Usage: "+b.usageOf(rb))
	}
	ok, err := b.access.allowed(ctx, rb.Name, sc.UserID, sc.ChannelID)
	if err != nil {
		b.log.Warn("access check failed", "user", sc.UserID, "runbook", rb.Name, "err", err)
		return errorReply("Could not check whether you may run " + rb.Name + "; try again in a moment.")
	}
	if !ok {
		b.log.Info("run refused: not allowed", "user", sc.UserID, "channel", sc.ChannelID, "runbook", rb.Name)
		return errorReply(fmt.Sprintf("You may not run %s in this channel. Who may run which runbook is set in runbot's access rules.", rb.Name))
	}
	key := ""
	if sc.TriggerID != "" {
		key = "slack:command:" + sc.TriggerID
	}
	acc, err := b.disp.Submit(ctx, Request{
		Key: key, Runbook: rb.Name, Params: params, RequestedBy: sc.UserID, Source: store.TriggerSlack,
		Channel: sc.ChannelID, ReplyTo: sc.ResponseURL,
	})
	var pe *runbooks.ParamError
	switch {
	case errors.As(err, &pe):
		return errorReply(pe.Error()+".", "Usage: "+b.usageOf(rb), "`"+b.cfg.Command+" explain "+rb.Name+"` describes its params.")
	case err != nil:
		b.log.Warn("run not queued", "runbook", rb.Name, "err", err)
		return errorReply(fmt.Sprintf("Could not start %s: %v.", rb.Name, err))
	case acc.Duplicate && acc.RunID != "":
		return Message{Title: rb.Name + " is already running", Status: StatusRunning, Facts: []Fact{{Label: "Run", Text: acc.RunID, Code: true}}}
	case acc.Duplicate:
		return Message{Title: rb.Name + " is already queued", Status: StatusRunning}
	}
	return Message{Title: "Starting " + rb.Name, Status: StatusRunning, Sections: []Section{{Text: "Findings will be posted in this channel as the steps finish."}}}
}
