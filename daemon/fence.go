package daemon

import (
	"context"
	"sync"
	"time"
)

// fenceMargin is how long before this replica's lease can lapse it stops
// the fixes it applies: time for a cancelled action to reach its SSH
// session over a
// slow link, and for the sweep of a survivor whose clock reads the lapse
// a little early despite the store's margins.
const fenceMargin = 5 * time.Second

// fenceCheckEvery is how often the fence looks at the clock.
const fenceCheckEvery = 500 * time.Millisecond

// leaseFence stops the fixes this replica applies before its lease can
// lapse. A replica cut off from the store (PostgreSQL unreachable, its
// host partitioned) cannot renew its lease; once the lease has expired
// another replica takes over its deployment lock and its plans, so by then
// this one must have stopped acting on targets, and it must not resume
// what it stopped when the store answers again (dispatch.Fence).
type leaseFence struct {
	fence func()
	now   func() time.Time

	mu     sync.Mutex
	until  time.Time
	fenced bool
}

// renewed is told until when the lease surely holds (store.KeepAlive).
func (f *leaseFence) renewed(until time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.until, f.fenced = until, false
}

// watch fences once per lapse, fenceMargin before the lease can expire,
// until ctx ends.
func (f *leaseFence) watch(ctx context.Context) {
	tick := time.NewTicker(fenceCheckEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		f.mu.Lock()
		due := !f.fenced && !f.until.IsZero() && !f.now().Before(f.until.Add(-fenceMargin))
		if due {
			f.fenced = true
		}
		f.mu.Unlock()
		if due {
			f.fence()
		}
	}
}
