package runview

import (
	"github.com/runbot/runbot/chat"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/store"
)

// Preview builds the message the bot would post for a finished run, its
// proposal (if any) and the outcome of applying it (if any). The CLI's demo
// prints it, so what a terminal shows is exactly what Slack would.
func Preview(run store.Run, rb *runbooks.Runbook, rep *runbooks.Report, prop *remediation.Proposal, approvals []store.Approval, result *remediation.ApplyResult) chat.Message {
	rs := New(run, rb)
	rs.SetReport(rep)
	if prop != nil {
		rs.Proposal, rs.Plan, rs.Approvals = prop, prop.Plan, approvals
		if result != nil {
			rs.Plan.State = result.State
		}
	}
	rs.Result = result
	return rs.Message()
}
