// Package heartbeat tracks the progress of a daemon's internal loops, so
// that its health endpoints and systemd watchdog report whether the loops
// actually make progress — not merely that the process answers HTTP. It is
// the incident's lesson applied to runbot itself: alive is not working.
package heartbeat

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Monitor holds one heartbeat per registered loop.
type Monitor struct {
	mu    sync.Mutex
	now   func() time.Time
	loops map[string]*loop
	// joined monitors are checked too (see Join).
	joined []*Monitor
}

type loop struct {
	maxGap time.Duration
	last   time.Time
	// tried is the end of the loop's last attempt, a success or a
	// failure: a loop that goes round is not hung, whatever it meets.
	tried  time.Time
	beaten bool
	// failed is why the loop's last attempt failed, until it beats again:
	// a probe that answers "down" is not waited out for maxGap.
	failed string
}

// New returns a monitor using now as its clock (time.Now when nil).
func New(now func() time.Time) *Monitor {
	if now == nil {
		now = time.Now
	}
	return &Monitor{now: now, loops: map[string]*loop{}}
}

// Register adds a loop that must beat at least every maxGap. It counts as
// having beaten at registration, so a loop gets maxGap to start.
func (m *Monitor) Register(name string, maxGap time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	m.loops[name] = &loop{maxGap: maxGap, last: now, tried: now}
}

// Beat records progress of a loop.
func (m *Monitor) Beat(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if l, ok := m.loops[name]; ok {
		l.last, l.tried, l.beaten, l.failed = m.now(), m.now(), true, ""
	}
}

// Fail records that a loop's last attempt failed, and why: it is reported
// at once, with the reason, until it beats again. Reasons must hold no
// secret; they are shown on /readyz.
func (m *Monitor) Fail(name string, reason error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if l, ok := m.loops[name]; ok {
		l.failed, l.tried = reason.Error(), m.now()
	}
}

// Tried records that a loop went round without making progress (its
// store did not answer, say), without reporting a failure: it is not hung
// (see Hung), and Check still counts from its last beat.
func (m *Monitor) Tried(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if l, ok := m.loops[name]; ok {
		l.tried = m.now()
	}
}

// Stuck describes a loop that has not beaten in time.
type Stuck struct {
	Loop  string
	Since time.Duration
	Max   time.Duration
	// Failed is why its last attempt failed, when it did.
	Failed string
}

func (s Stuck) String() string {
	if s.Failed != "" {
		return fmt.Sprintf("%s is down: %s", s.Loop, s.Failed)
	}
	return fmt.Sprintf("%s has made no progress for %s (limit %s)", s.Loop, s.Since.Round(time.Second), s.Max)
}

// Check returns the loops that are stuck or whose last attempt failed,
// sorted by name; none means healthy.
func (m *Monitor) Check() []Stuck {
	var out []Stuck
	for _, j := range m.joined {
		out = append(out, j.Check()...)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	for name, l := range m.loops {
		if gap := now.Sub(l.last); gap > l.maxGap || l.failed != "" {
			out = append(out, Stuck{Loop: name, Since: gap, Max: l.maxGap, Failed: l.failed})
		}
	}
	slices.SortFunc(out, func(a, b Stuck) int { return strings.Compare(a.Loop, b.Loop) })
	return out
}

// Hung returns the loops that have stopped going round: no attempt,
// successful or failed, within their gap, sorted by name. It is what a
// watchdog restarts the process for. A loop whose attempts fail because a
// dependency is down (the store, the chat platform) is not hung: a
// restart would not bring the dependency back, and it would drop what the
// process holds in memory meanwhile (a run in flight, a chat message
// waiting for the store).
func (m *Monitor) Hung() []Stuck {
	var out []Stuck
	for _, j := range m.joined {
		out = append(out, j.Hung()...)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	for name, l := range m.loops {
		if gap := now.Sub(l.tried); gap > l.maxGap {
			out = append(out, Stuck{Loop: name, Since: gap, Max: l.maxGap})
		}
	}
	slices.SortFunc(out, func(a, b Stuck) int { return strings.Compare(a.Loop, b.Loop) })
	return out
}

// AllBeat reports whether every loop has beaten at least once since it was
// registered: readiness waits for a first real success, not just for time.
func (m *Monitor) AllBeat() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, l := range m.loops {
		if !l.beaten {
			return false
		}
	}
	return true
}

// Join returns a monitor whose Check reports the stuck loops of all of ms.
func Join(ms ...*Monitor) *Monitor {
	return &Monitor{now: time.Now, loops: map[string]*loop{}, joined: ms}
}
