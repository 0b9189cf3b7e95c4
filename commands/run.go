package commands

import (
	"context"
	"errors"
	"fmt"

	"github.com/runbot/runbot/chat"
	"github.com/runbot/runbot/dispatch"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/store"
)

// run checks that the user may run the runbook here, validates the params
// and queues the run. The reply says what happened; the run's message
// appears in the channel.
func (h *Handler) run(ctx context.Context, c chat.Command, rb *runbooks.Runbook, words []string) chat.Message {
	params, err := bindArgs(rb, words)
	if err != nil {
		return errorReply(fmt.Sprintf("%s: %v.", rb.Name, err), "Usage: "+h.usageOf(rb))
	}
	ok, err := h.access.Load().allowed(ctx, rb.Name, c.User, c.Channel)
	if err != nil {
		h.log.Warn("access check failed", "user", c.User, "runbook", rb.Name, "err", err)
		return errorReply("Could not check whether you may run " + rb.Name + "; try again in a moment.")
	}
	if !ok {
		h.log.Info("run refused: not allowed", "user", c.User, "channel", c.Channel, "runbook", rb.Name)
		return errorReply(fmt.Sprintf("You may not run %s in this channel. Who may run which runbook is set in runbot's access rules.", rb.Name))
	}
	// A redelivered command (the same ID) is the work the first delivery
	// queued, not a second run.
	key := ""
	if c.ID != "" {
		key = "command:" + c.ID
	}
	acc, err := h.disp.Submit(ctx, dispatch.Request{
		Key: key, Runbook: rb.Name, Params: params, RequestedBy: c.User, Source: store.TriggerChat,
		Channel: c.Channel, Thread: c.Thread, ReplyTo: c.ReplyTo,
	})
	var pe *runbooks.ParamError
	switch {
	case errors.As(err, &pe):
		return errorReply(pe.Error()+".", "Usage: "+h.usageOf(rb), chat.Code(h.cfg.Command+" explain "+rb.Name)+" describes its params.")
	case err != nil:
		h.log.Warn("run not queued", "runbook", rb.Name, "err", err)
		return errorReply(fmt.Sprintf("Could not start %s: %v.", rb.Name, err))
	case acc.Duplicate && acc.Done:
		// Slack delivered the same command again after its run ended:
		// the answer is where that run is, not that it runs.
		return chat.Message{Title: rb.Name + " already ran for this command", Status: chat.StatusInfo,
			Facts: []chat.Fact{{Label: "Run", Text: acc.RunID, Code: true}}, Notes: []string{chat.Code(h.cfg.Command+" status "+acc.RunID) + " shows its result."}}
	case acc.Duplicate && acc.RunID != "":
		return chat.Message{Title: rb.Name + " is already running", Status: chat.StatusRunning, Facts: []chat.Fact{{Label: "Run", Text: acc.RunID, Code: true}}}
	case acc.Duplicate:
		return chat.Message{Title: rb.Name + " is already queued", Status: chat.StatusRunning}
	}
	return chat.Message{Title: "Starting " + rb.Name, Status: chat.StatusRunning, Sections: []chat.Section{{Text: "Findings will be posted in this channel as the steps finish."}}}
}
