package bot

import (
	"github.com/runbot/runbot/chat"
	"github.com/runbot/runbot/dispatch"
)

// The dispatch core's requests and results, as the Slack front and the
// triggers here use them.
type (
	Dispatcher          = dispatch.Dispatcher
	Request             = dispatch.Request
	Accepted            = dispatch.Accepted
	UnknownRunbookError = dispatch.UnknownRunbookError
	Vote                = dispatch.Vote
	VoteResult          = dispatch.VoteResult
	Direct              = dispatch.Direct
	DirectResult        = dispatch.DirectResult
	TimelineFunc        = dispatch.TimelineFunc
)

// The message model is the chat seam's (package chat); the bot renders it
// as Block Kit.
type (
	Message     = chat.Message
	Fact        = chat.Fact
	Section     = chat.Section
	Line        = chat.Line
	Button      = chat.Button
	ButtonStyle = chat.ButtonStyle
	Status      = chat.Status
)

const (
	StylePrimary = chat.StylePrimary
	StyleDanger  = chat.StyleDanger

	StatusNone         = chat.StatusNone
	StatusRunning      = chat.StatusRunning
	StatusOK           = chat.StatusOK
	StatusInfo         = chat.StatusInfo
	StatusWarning      = chat.StatusWarning
	StatusCritical     = chat.StatusCritical
	StatusInconclusive = chat.StatusInconclusive
	StatusError        = chat.StatusError
	StatusWaiting      = chat.StatusWaiting
	StatusPending      = chat.StatusPending
	StatusApproved     = chat.StatusApproved
	StatusDenied       = chat.StatusDenied
	StatusSkipped      = chat.StatusSkipped
)

// redactMessage returns a copy of m with every text passed through r.
func redactMessage(m Message, r *Redactor) Message { return m.Map(r.Redact) }
