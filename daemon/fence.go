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
// A renewal that comes after the lease could have lapsed does not undo the
// lapse: another replica may have taken this one's work over meanwhile.
// That happens when the whole process was paused (a VM suspended, a
// machine frozen) and resumes: the renewal and the watch then wake at
// once, and were the renewal first, it would re-arm the fence before the
// watch saw the lapse, and the applies in flight would go on. So the
// renewal fences them itself first.
func (f *leaseFence) renewed(until time.Time) {
	f.mu.Lock()
	lapsed := f.due()
	f.until, f.fenced = until, false
	f.mu.Unlock()
	if lapsed {
		f.fence()
	}
}

// due says the fence should stop the applies now: the lease may lapse
// within fenceMargin and they were not stopped for it yet. Call with mu
// held.
func (f *leaseFence) due() bool {
	return !f.fenced && !f.until.IsZero() && !f.now().Before(f.until.Add(-fenceMargin))
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
		due := f.due()
		if due {
			f.fenced = true
		}
		f.mu.Unlock()
		if due {
			f.fence()
		}
	}
}
