package dispatch

import (
	"errors"

	"github.com/runbot/runbot/internal/yamlnode"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/catalog"
	"github.com/runbot/runbot/runbooks/engine"
	"github.com/runbot/runbot/runbooks/record"
	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/store"
)

// Set is what runs are prepared, run and remediated against: the catalog of
// runbooks, and the engine and remediator bound to one inventory. A reload
// (SIGHUP) replaces the whole set at once with Swap; nothing in it is ever
// changed in place.
type Set struct {
	Catalog    *catalog.Catalog
	Engine     *engine.Engine
	Remediator *remediation.Remediator
}

// runSet is a Set with the recorder built over it. A run takes the current
// one when it starts (Dispatcher.current) and keeps it to its end, so that
// a reload in the middle of a run neither changes the runbook it follows
// nor the hosts its targets resolve to.
type runSet struct {
	catalog  *catalog.Catalog
	engine   *engine.Engine
	rem      *remediation.Remediator
	recorder *record.Recorder
}

func newRunSet(s Set, runs store.Runs) (*runSet, error) {
	if s.Catalog == nil || s.Engine == nil || s.Remediator == nil {
		return nil, errors.New("dispatcher: catalog, engine and remediator are required")
	}
	return &runSet{
		catalog: s.Catalog, engine: s.Engine, rem: s.Remediator,
		recorder: &record.Recorder{Engine: s.Engine, Runs: runs, Remediator: s.Remediator},
	}, nil
}

// runbook returns the named runbook of the set, or an
// *UnknownRunbookError.
func (s *runSet) runbook(name string) (*runbooks.Runbook, error) {
	rb, err := s.catalog.Get(name)
	if err != nil {
		return nil, &UnknownRunbookError{Name: name, Suggestion: yamlnode.Suggest(name, s.catalog.Names())}
	}
	return rb, nil
}

// current is the set new work starts with. Callers take it once and use
// that one value for everything the work does.
func (d *Dispatcher) current() *runSet { return d.set.Load() }

// Swap makes s the set that work starting from now on uses; work in flight
// finishes with the set it started with. It is safe to call while runs go.
func (d *Dispatcher) Swap(s Set) error {
	rs, err := newRunSet(s, d.store)
	if err != nil {
		return err
	}
	d.set.Store(rs)
	return nil
}

// Current is the set work starting now uses. A caller that looks a
// runbook up and then prepares or explains it takes the set once and uses
// its catalog and engine together, so that a reload between the two cannot
// pair a runbook with another inventory than the one it was checked with.
func (d *Dispatcher) Current() Set {
	s := d.current()
	return Set{Catalog: s.catalog, Engine: s.engine, Remediator: s.rem}
}
