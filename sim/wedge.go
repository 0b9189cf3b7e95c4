package sim

import "time"

// wedgeModel is the causal model of the incident's wedge. With the overlap
// ("zero-overhead") schedule on, the decode loop keeps the next batch's result in
// flight while it processes the previous one; a burst of in-flight KV transfers
// aborted at once leaves that loop waiting on a result that will never be produced,
// so it stops issuing batches and stops polling transfers. The control plane
// (aborts, health, metrics) keeps working. Without the overlap schedule the loop is
// strictly sequential and the same burst is harmless. Only a restart clears a wedge.
type wedgeModel struct {
	overlap bool
	burst   int
	window  time.Duration
	recent  []time.Time
	wedged  bool
	since   time.Time
}

func newWedgeModel(overlap bool, burst int, window time.Duration) wedgeModel {
	return wedgeModel{overlap: overlap, burst: burst, window: window}
}

// observeAbort records one aborted in-flight transfer and reports whether this
// abort is the one that wedged the scheduler.
func (m *wedgeModel) observeAbort(now time.Time) bool {
	if m.wedged || !m.overlap {
		return false
	}
	keep := m.recent[:0]
	for _, t := range m.recent {
		if now.Sub(t) <= m.window {
			keep = append(keep, t)
		}
	}
	m.recent = append(keep, now)
	if len(m.recent) >= m.burst {
		m.wedged, m.since = true, now
		m.recent = nil
		return true
	}
	return false
}
