package dispatch

import (
	"context"
	"encoding/json"
	"time"

	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/store"
)

// awayVotesLookback is how far back the first sweep after a start looks
// for votes cast away from chat: a deny cast while serve was stopped still
// takes the Approve button off the plan's message once serve is back.
const awayVotesLookback = time.Hour

// showAwayVotes brings the messages of plans voted on away from chat
// (runbot approve|deny, the report page) up to date: a denied plan loses
// its buttons, a counted approval shows "1 of 2". A vote that approved the
// plan is shown by the apply that follows it (applyStranded), and a
// refused one changed nothing. Each replica's sweep shows each vote once;
// several replicas write the same message, which is harmless.
func (d *Dispatcher) showAwayVotes(ctx context.Context) {
	f := store.AuditFilter{Kind: remediation.AuditVoteSource, AfterID: d.awaySeen.Load()}
	if f.AfterID == 0 {
		f.Since = d.now().Add(-awayVotesLookback)
	}
	events, err := d.store.Audit(ctx, f)
	if err != nil {
		d.log.Warn("votes cast away from chat not checked", "err", err)
		return
	}
	for _, e := range events {
		d.awaySeen.Store(max(d.awaySeen.Load(), e.ID))
		var vs remediation.VoteSource
		if json.Unmarshal(e.Detail, &vs) != nil || vs.Channel == "" {
			continue
		}
		if vs.Outcome != remediation.OutcomeDenied && vs.Outcome != remediation.OutcomeCounted {
			continue
		}
		planID, runID := e.PlanID, e.RunID
		err := d.tasks.Go("show a vote cast away from chat", expiredShowTimeout, func(ctx context.Context) {
			rs, release, err := d.hold(runID, func() (*runState, error) { return d.loadPlanState(ctx, planID) })
			if err != nil {
				d.log.Warn("message not updated for a vote cast away from chat", "plan", planID, "err", err)
				return
			}
			defer release()
			d.reloadPlan(ctx, rs)
			d.show(ctx, rs)
		})
		if err != nil {
			d.log.Warn("message not updated for a vote cast away from chat", "plan", planID, "err", err)
		}
	}
}
