package commands

import (
	"context"
	"errors"
	"fmt"

	"github.com/runbot/runbot/chat"
	"github.com/runbot/runbot/runbooks/remediation"
)

// rearm answers "rearm DEPLOYMENT DIAGNOSIS": it closes the circuit
// breaker a failed fix opened, for someone who may approve that fix.
func (h *Handler) rearm(ctx context.Context, c chat.Command, words []string) chat.Message {
	usage := chat.Code(h.cfg.Command+" rearm DEPLOYMENT DIAGNOSIS") + " re-arms the circuit breaker a failed fix opened."
	if len(words) != 2 {
		return errorReply("Which breaker? "+usage, "The message of the refused fix names both.")
	}
	plan, err := h.disp.Rearm(ctx, words[0], words[1], c.User)
	switch {
	case errors.Is(err, remediation.ErrBreakerClosed):
		return errorReply(fmt.Sprintf("Nothing to re-arm: no failed fix for %s on %s keeps the breaker open.", words[1], words[0]))
	case errors.Is(err, remediation.ErrMayNotRearm):
		return errorReply("You may not re-arm this breaker: " + err.Error() + ".")
	case err != nil:
		h.log.Warn("breaker not re-armed", "deployment", words[0], "diagnosis", words[1], "user", c.User, "err", err)
		return errorReply("Could not re-arm the breaker: " + err.Error() + ".")
	}
	h.log.Info("circuit breaker re-armed", "deployment", words[0], "diagnosis", words[1], "plan", plan.ID, "user", c.User)
	return chat.Message{Title: "Circuit breaker re-armed", Status: chat.StatusOK, Sections: []chat.Section{{
		Text: fmt.Sprintf("The breaker of %s on %s, opened when plan %s ended %s, is re-armed: the next approved fix may run. It is in the audit log under your name.",
			words[1], words[0], plan.ID, plan.State),
	}}}
}
