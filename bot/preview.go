package bot

import (
	"context"
	"fmt"

	"github.com/slack-go/slack"

	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/store"
)

// Preview builds the message the bot would post for a finished run, its
// proposal (if any) and the outcome of applying it (if any). The CLI's demo
// prints it, so what a terminal shows is exactly what Slack would.
func Preview(run store.Run, rb *runbooks.Runbook, rep *runbooks.Report, prop *runbooks.Proposal, approvals []store.Approval, result *runbooks.ApplyResult) Message {
	rs := newRunState(run, rb)
	rs.report = rep
	for _, tr := range rep.Steps {
		rs.steps[tr.Step] = append(rs.steps[tr.Step], tr)
	}
	if prop != nil {
		rs.proposal, rs.plan, rs.approvals = prop, prop.Plan, approvals
		if result != nil {
			rs.plan.State = result.State
		}
	}
	rs.result = result
	return rs.view()
}

// PostPreview posts a preview message to a real Slack channel with the
// given bot token: the demo's optional last mile. apiURL overrides Slack's
// Web API URL (a proxy, or a test server) when not empty.
func PostPreview(ctx context.Context, token, channel, apiURL string, m Message) (string, error) {
	var opts []slack.Option
	if apiURL != "" {
		opts = append(opts, slack.OptionAPIURL(apiURL))
	}
	api := slack.New(token, opts...)
	_, ts, err := api.PostMessageContext(ctx, channel, slack.MsgOptionText(fallbackText(m), false), slack.MsgOptionBlocks(renderBlocks(m)...))
	if err != nil {
		return "", fmt.Errorf("post to slack channel %s: %w", channel, err)
	}
	return ts, nil
}
