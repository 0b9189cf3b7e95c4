package dispatch

import (
	"errors"
)

// ErrLeaseLost is the cause of the work a Fence cancelled: this process
// could not renew its replica lease in time, so another replica may soon
// take over what it was doing.
var ErrLeaseLost = errors.New("this replica could not renew its lease in time; another replica may take over its work")

// Fence stops everything this process is doing for runbot (runs, applies,
// the messages they update) because its replica lease is about to lapse:
// it must stop acting before another replica can take its work over, and
// what it stopped is not resumed when the store answers again (the
// survivor's recovery, or this process's own sweep, picks the work up
// from the store). The worker loop it cancels too is started again by
// the next sweep.
func (d *Dispatcher) Fence() {
	if n := d.tasks.Fence(ErrLeaseLost); n > 0 {
		d.log.Error("stopped all work: the replica lease could not be renewed in time", "tasks", n)
	}
}
