package dispatch

import (
	"github.com/runbot/runbot/chat"
)

// RunEnd is a run that ended, as a trigger shows it beside what started
// it (an alert group's summary): its status icon and one line of verdict.
type RunEnd struct {
	WorkID string
	RunID  string
	Status chat.Status
	// Verdict is the run's diagnosis, or its worst finding, in one line.
	Verdict string
	// Message says whether the run posted a message of its own (a fix to
	// approve, a run that could not start).
	Message bool
}

// OnRunEnd calls fn for each run of this process that ends from now on,
// after its report is recorded. fn must not block: it runs on the run's
// worker.
func (d *Dispatcher) OnRunEnd(fn func(RunEnd)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ended = append(d.ended, fn)
}

func (d *Dispatcher) runEnded(e RunEnd) {
	d.mu.Lock()
	fns := d.ended
	d.mu.Unlock()
	for _, fn := range fns {
		fn(e)
	}
}
