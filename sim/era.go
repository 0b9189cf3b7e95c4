package sim

import (
	"fmt"
	"strings"
)

// LogEra names one generation of SGLang's log wording. SGLang changed the shape of
// its batch lines several times (see reference §1.2 and §1.3), and parsers downstream
// must cope with all of them, so the simulator can speak each one on request.
type LogEra int

const (
	// EraMid2025 is the "Prefill batch. … #queue-req: 0, " wording of builds up to mid 2025.
	EraMid2025 LogEra = iota
	// EraLate2025 is the v0.5.8-style wording with a trailing ", " and #prealloc-req.
	EraLate2025
	// EraMid2026 is the ~May 2026 wording used by the fixtures: no trailing comma,
	// #pending-token and #prealloc-req on prefill.
	EraMid2026
	// EraLate2026 is the newest wording: #bootstrap-req and #optimistic-req on prefill.
	// (Its fixtures carry millisecond time stamps because their deployment set
	// SGLANG_LOG_MS=1; `up` does the same for this era.)
	EraLate2026
)

// DefaultEra is the wording of the fixtures and of the incident's build.
const DefaultEra = EraMid2026

var eraNames = map[LogEra]string{
	EraMid2025:  "2025-mid",
	EraLate2025: "2025-late",
	EraMid2026:  "2026-mid",
	EraLate2026: "2026-late",
}

// String returns the flag spelling of the era, e.g. "2026-mid".
func (e LogEra) String() string {
	if n, ok := eraNames[e]; ok {
		return n
	}
	return fmt.Sprintf("LogEra(%d)", int(e))
}

// ParseLogEra turns a --sim-log-format value into an era. It accepts the era names
// and a few aliases so that a typo fails loudly instead of silently picking a default.
func ParseLogEra(s string) (LogEra, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "2025-mid", "mid-2025", "old", "dot":
		return EraMid2025, nil
	case "2025-late", "late-2025", "v0.5.8":
		return EraLate2025, nil
	case "", "2026-mid", "mid-2026", "default", "fixture":
		return EraMid2026, nil
	case "2026-late", "late-2026", "newest", "new":
		return EraLate2026, nil
	}
	return 0, fmt.Errorf("unknown log format %q (want 2025-mid, 2025-late, 2026-mid or 2026-late)", s)
}
