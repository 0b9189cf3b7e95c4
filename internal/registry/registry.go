// Package registry is a set of named plug-in types (the check types, the
// action types) that is a value: each kind has a default registry, and a
// test or a plug-in makes its own, so that what it registers reaches no
// other.
package registry

import (
	"fmt"
	"maps"
	"slices"
	"sync"
)

// Registry holds types of one kind by name. It is safe for concurrent
// use: a plug-in may register while runbooks are loaded.
type Registry[T any] struct {
	kind  string
	check func(name string, t T) error
	mu    sync.RWMutex
	types map[string]T
}

// New is a registry of kind ("check", "action") holding a copy of types;
// check, when set, refuses a type Register is given (one with no
// implementation, or a spec of another name).
func New[T any](kind string, types map[string]T, check func(name string, t T) error) *Registry[T] {
	own := make(map[string]T, len(types))
	maps.Copy(own, types)
	return &Registry[T]{kind: kind, check: check, types: own}
}

// Lookup returns the type with the given name.
func (r *Registry[T]) Lookup(name string) (T, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	t, ok := r.types[name]
	return t, ok
}

// Names lists the registered names, sorted.
func (r *Registry[T]) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Sorted(maps.Keys(r.types))
}

// Register adds t under name. It refuses an empty name and a name already
// taken, since a runbook that names a type must get the one its author
// read about.
func (r *Registry[T]) Register(name string, t T) error {
	if name == "" {
		return fmt.Errorf("register a %s: a name is required", r.kind)
	}
	if r.check != nil {
		if err := r.check(name, t); err != nil {
			return fmt.Errorf("register %s %q: %w", r.kind, name, err)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, taken := r.types[name]; taken {
		return fmt.Errorf("register %s %q: the name is taken", r.kind, name)
	}
	r.types[name] = t
	return nil
}
