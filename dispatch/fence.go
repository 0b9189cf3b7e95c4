package dispatch

import (
	"context"
	"errors"
	"sync"
)

// ErrLeaseLost is the cause of the applies a Fence cancelled: this process
// could not renew its replica lease in time, so another replica may soon
// take over its deployment locks and plans.
var ErrLeaseLost = errors.New("this replica could not renew its lease in time; another replica may take over its work")

// Fence stops the fixes this process is applying, because its replica
// lease is about to lapse: it must stop acting on targets before another
// replica can take its deployment lock and plan over, and what it stopped
// is not resumed when the store answers again (a survivor's sweep
// interrupts the plan; a new approval is needed). Diagnostic runs go on:
// they change nothing, and their ends are recorded once the store answers.
func (d *Dispatcher) Fence() {
	if n := d.applies.fence(ErrLeaseLost); n > 0 {
		d.log.Error("stopped applying: the replica lease could not be renewed in time", "applies", n)
	}
}

// fenceSet holds the cancel functions of the applies in flight.
type fenceSet struct {
	mu      sync.Mutex
	next    uint64
	cancels map[uint64]context.CancelCauseFunc
}

// guard returns ctx, cancelled by the next fence; call done when the
// guarded work ends.
func (f *fenceSet) guard(ctx context.Context) (guarded context.Context, done func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cancels == nil {
		f.cancels = map[uint64]context.CancelCauseFunc{}
	}
	id := f.next
	f.next++
	f.cancels[id] = cancel
	return ctx, func() {
		f.mu.Lock()
		delete(f.cancels, id)
		f.mu.Unlock()
		cancel(nil)
	}
}

// fence cancels everything guarded now with cause and says how much.
func (f *fenceSet) fence(cause error) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, cancel := range f.cancels {
		cancel(cause)
	}
	return len(f.cancels)
}
