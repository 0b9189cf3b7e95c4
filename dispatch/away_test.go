package dispatch

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/chat"
	"github.com/runbot/runbot/chat/chattest"
	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/store"
)

// A vote cast away from chat (runbot deny, by another process on the same
// store) reaches the plan's chat message at serve's next sweep: a denied
// plan loses its Approve button and says denied, a counted approval shows
// its count, and a sweep after that does not post again.
func TestSweepShowsVotesCastAwayFromChat(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		approve  bool
		state    store.PlanState
		buttons  bool
		wantText string
	}{
		"a deny": {approve: false, state: store.PlanDenied, buttons: false, wantText: "Denied by @U0AAA"},
		// stuck-worker's plan needs two approvals.
		"one of two approvals": {approve: true, state: store.PlanProposed, buttons: true, wantText: "1 of 2"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			rec := chattest.New()
			d, st, dir := newChatDispatcher(t, rec)
			groups := remediation.Groups{"oncall": {"U0AAA", "U0BBB"}}
			d.current().rem.Groups = groups
			_, err := d.Submit(ctx, Request{Runbook: "stuck-worker", Params: map[string]string{"host": "here", "dir": dir}, RequestedBy: requester, Source: store.TriggerChat})
			require.NoError(t, err)
			require.NoError(t, d.Idle(ctx))
			plans, err := st.ListPlans(ctx, store.PlanFilter{States: []store.PlanState{store.PlanProposed}})
			require.NoError(t, err)
			require.Len(t, plans, 1)
			plan := plans[0]
			last := func() chattest.Post {
				posts := rec.Posts()
				require.NotEmpty(t, posts)
				return posts[len(posts)-1]
			}
			require.True(t, hasApprove(last().Last()), "the proposed plan has an Approve button")

			cli := &remediation.Remediator{Store: st, Groups: groups}
			src := remediation.Source{Channel: remediation.ChannelCLI, Login: "alice"}
			res, err := cli.VoteFrom(ctx, src, plan.ID, "U0AAA", tc.approve, plan.Hash)
			require.NoError(t, err)
			require.Equal(t, tc.state, res.Plan.State)

			_, err = d.Sweep(ctx)
			require.NoError(t, err)
			require.NoError(t, d.Idle(ctx))
			got := last().Last()
			require.Equal(t, tc.buttons, hasApprove(got), "buttons after the vote: %s", got.Text())
			require.Contains(t, got.Text(), tc.wantText)

			updates := len(last().Updates)
			_, err = d.Sweep(ctx)
			require.NoError(t, err)
			require.NoError(t, d.Idle(ctx))
			require.Len(t, last().Updates, updates, "a vote is shown once")
		})
	}
}

func hasApprove(m chat.Message) bool {
	for _, b := range m.Buttons {
		if b.Label == "Approve" {
			return true
		}
	}
	return false
}
