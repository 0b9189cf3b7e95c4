package dispatch

import (
	"sync"

	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/engine"
	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/runview"
	"github.com/runbot/runbot/store"
)

// runState is one run's chat message as the dispatcher keeps it: its
// view (runview.State), guarded by mu, and the live message that shows
// it.
type runState struct {
	refs int // guarded by Dispatcher.mu

	mu sync.Mutex
	runview.State
	live *Live
	// posting says the first message could not be queued yet and is
	// being tried again in the background (Dispatcher.postLater).
	posting bool
}

func newRunState(run store.Run, rb *runbooks.Runbook) *runState {
	return &runState{State: *runview.New(run, rb)}
}

// loadRunState rebuilds a run's state from the store, for a click on a
// message posted before a restart or by a run this process no longer holds.
func loadRunState(run store.Run, rb *runbooks.Runbook, prop *remediation.Proposal) (*runState, error) {
	v, err := runview.Load(run, rb, prop)
	if err != nil {
		return nil, err
	}
	return &runState{State: *v}, nil
}

// stepEvent records a step starting or finishing on a target.
func (rs *runState) stepEvent(ev engine.Event) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.Event(ev)
}

// publish renders the state and hands it to the live message.
func (rs *runState) publish() {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.live != nil {
		rs.live.Set(rs.Message())
	}
}
