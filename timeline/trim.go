package timeline

import "time"

// minTrimMargin is the least time shown before the earliest evidence when
// the axis is trimmed: the progress rate just before it is what a reader
// compares it with.
const minTrimMargin = time.Minute

// trimmedStart is the left edge of a chart whose window the caller did
// not choose: the earliest thing the run saw (a probe, an error line, the
// last progress line, a sample, a marker) less a margin of a quarter of
// what follows it and at least minTrimMargin, and never before c.Start.
// Two minutes of evidence then fill the picture rather than its last
// eighth. What began earlier is not lost: a lane's rate and its silence
// are drawn from the left edge (segments and stallBand clip to it), and a
// last progress line before it is written "← last … ago".
func (c *Chart) trimmedStart() time.Time {
	var first time.Time
	see := func(t time.Time) {
		if t.IsZero() || t.Before(c.Start) || t.After(c.End) {
			return
		}
		if first.IsZero() || t.Before(first) {
			first = t
		}
	}
	for _, p := range c.Probes {
		see(p.Start)
	}
	for _, l := range c.Lanes {
		see(l.Last)
		for _, m := range l.Marks {
			see(m.Time)
		}
	}
	for _, k := range c.Counters {
		for _, p := range k.Points {
			see(p.Time)
		}
	}
	for _, m := range c.Markers {
		see(m.Time)
	}
	if first.IsZero() {
		return c.Start
	}
	margin := max(c.End.Sub(first)/4, minTrimMargin)
	return maxTime(c.Start, first.Add(-margin))
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
