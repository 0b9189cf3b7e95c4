// Package step holds the vocabulary that checks, actions and the engine share
// about one unit of work on one target: its status and what it observed.
package step

import "time"

// Status says whether a step could do its work, not what it observed. A probe
// that saw a hung endpoint has status OK: the hang is evidence, and findings
// decide what it means.
type Status string

const (
	// OK means the check ran and collected its evidence.
	OK Status = "ok"
	// Error means the check could not run (host unreachable, command missing).
	Error Status = "error"
	// Timeout means the step's own deadline passed before it finished.
	Timeout Status = "timeout"
	// Canceled means the whole run was cancelled while the step ran.
	Canceled Status = "canceled"
	// Skipped means a step it needs did not run successfully.
	Skipped Status = "skipped"
)

// Ran reports whether the step collected evidence that findings may use.
func (s Status) Ran() bool { return s == OK }

// Result is what one check produced on one target.
type Result struct {
	// Values is the check's typed output: a pointer to, or value of, the
	// struct type its spec declares. Findings read it through expressions.
	Values any
	// Evidence holds human-readable lines an on-call engineer reads.
	Evidence []string
	// Events are timestamped observations (log lines, probe windows, samples)
	// kept for timelines and attribution.
	Events []Event
}

// Event is one timestamped observation a check made, such as a progress log
// line, an abort line, a probe's window or a counter sample.
type Event struct {
	Kind   string            `json:"kind"`
	Time   time.Time         `json:"time"`
	End    time.Time         `json:"end,omitzero"`
	Value  float64           `json:"value,omitempty"`
	Text   string            `json:"text,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
}
