package dispatch

import (
	"context"
	"time"

	"github.com/runbot/runbot/store"
)

// expiredShowTimeout bounds bringing one expired plan's message up to date.
const expiredShowTimeout = time.Minute

// ShowExpired brings the messages of plans whose approval window closed
// (store.ExpirePlans moved them) up to date: the plan reads "expired" and
// its buttons are gone, so no one clicks Approve on a plan that can no
// longer run. It returns at once; the updates run in the background so a
// slow chat never holds up the caller's loop.
func (d *Dispatcher) ShowExpired(plans []store.Plan) {
	for _, p := range plans {
		err := d.tasks.Go("show expired plan", expiredShowTimeout, func(ctx context.Context) {
			rs, release, err := d.hold(p.RunID, func() (*runState, error) { return d.loadPlanState(ctx, p.ID) })
			if err != nil {
				d.log.Warn("expired plan's message not updated", "plan", p.ID, "err", err)
				return
			}
			defer release()
			d.reloadPlan(ctx, rs)
			d.show(ctx, rs)
		})
		if err != nil {
			d.log.Warn("expired plan's message not updated", "plan", p.ID, "err", err)
		}
	}
}
