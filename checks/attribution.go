package checks

import (
	"strings"
	"time"

	"github.com/runbot/runbot/internal/step"
)

// probeWindow is one of this run's own probes, as log attribution sees it.
type probeWindow struct {
	ID         string
	Start, End time.Time
	// CutShort says the probe did not complete normally (it timed out, was
	// refused, or broke off). Only such a probe can make a server log an
	// abort at its end, so only such probes claim lines by time.
	CutShort bool
}

// probeWindows collects the probe events among the events a step observed.
func probeWindows(events []step.Event) []probeWindow {
	var ps []probeWindow
	for _, e := range events {
		if e.Kind != EventProbe {
			continue
		}
		end := e.End
		if end.IsZero() {
			end = e.Time
		}
		outcome, known := e.Labels["outcome"]
		ps = append(ps, probeWindow{
			ID: e.Labels["request_id"], Start: e.Time, End: end,
			CutShort: !known || (outcome != OutcomeOK && outcome != OutcomeBadStatus),
		})
	}
	return ps
}

// Attribution of a log line, the values of the "attribution" label of
// log_match events.
const (
	AttrEcho        = step.AttrEcho
	AttrUnexplained = step.AttrUnexplained
)

// attribution says whether our own probe caused a log line, and how we know.
type attribution struct {
	Echo      bool
	RequestID string
	// By is "id" when the line names the probe's request id, "time" when it
	// fell inside a cut-short probe's window (start to end plus grace).
	By string
}

func (a attribution) label() string {
	if a.Echo {
		return AttrEcho
	}
	return AttrUnexplained
}

// stampSlack is how much earlier than the event a log line's stamp may
// read: SGLang stamps its lines to the whole second unless SGLANG_LOG_MS is
// set, so a line written just after a probe gave up can carry the second
// before.
const stampSlack = time.Second

// attribute decides whether lines (one occurrence, possibly logged by
// several ranks) at time t were caused by one of the probes. Only a probe
// that was cut short can cause a line: a server logs a client abort when it
// notices the client has gone, which SGLang does 2 to 8 s after the client
// gave up (the tokenizer's abort task and the gateway's disconnect polling).
// A line naming the request id of such a probe is certainly its echo. Real
// engines mint their own request ids, so otherwise a line logged after the
// probe gave up (end, less the stamp's slack, to end plus grace) is taken to
// be one; a line logged while the probe still waited cannot be its echo,
// however close. A line naming a probe that completed (say with a 500) is a
// real failure that our request happened to meet: it is reported with the
// probe's id but stays unexplained.
func attribute(t time.Time, texts []string, probes []probeWindow, grace time.Duration) attribution {
	oc := &occurrence{time: t, texts: texts}
	attributeAll([]*occurrence{oc}, probes, grace)
	return oc.attr
}

// attributeAll attributes every occurrence of a pattern. By request id, as
// attribute does; by time, each cut-short probe explains at most one
// occurrence — the first logged after the probe gave up — because a
// client's disconnect is aborted once. Under load many other clients time
// out while our probe waits; their aborts stay unexplained.
func attributeAll(occs []*occurrence, probes []probeWindow, grace time.Duration) {
	explained := map[string]bool{}
	for _, oc := range occs {
		oc.attr = attribution{}
		for _, p := range probes {
			if p.ID == "" {
				continue
			}
			for _, text := range oc.texts {
				if strings.Contains(text, p.ID) {
					oc.attr = attribution{Echo: p.CutShort, RequestID: p.ID, By: "id"}
					explained[p.ID] = true
				}
			}
		}
	}
	for _, p := range probes {
		if !p.CutShort || explained[p.ID] {
			continue
		}
		var best *occurrence
		var bestD time.Duration
		for _, oc := range occs {
			if oc.attr.By != "" || !oc.time.After(p.End.Add(-stampSlack)) || oc.time.After(p.End.Add(grace)) {
				continue
			}
			if d := oc.time.Sub(p.End); best == nil || d < bestD {
				best, bestD = oc, d
			}
		}
		if best != nil {
			best.attr = attribution{Echo: true, RequestID: p.ID, By: "time"}
		}
	}
}
