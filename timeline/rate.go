package timeline

import (
	"math"
	"time"
)

// segment is a stretch of wall time drawn at one progress rate.
type segment struct {
	Start, End time.Time
	PerMinute  float64
}

// minObserved keeps a bucket the check saw only the first seconds of from
// extrapolating a few lines into a storm.
const minObserved = 10 * time.Second

// segments turns a lane's buckets into what is drawn, within [from, to].
// Two facts sharpen the per-minute buckets: no progress line came after
// the last one, so the bucket holding it is busy only up to it (that is
// where the cliff is, and its lines are a rate over that part, not a
// slowdown before it); and the check looked at Measured, so a bucket still
// open then is a rate over the part that was observed, not a drop.
func (l *Lane) segments(from, to time.Time) []segment {
	var out []segment
	for _, b := range l.Rate {
		end := b.End
		if !l.Measured.IsZero() && l.Measured.Before(end) {
			end = l.Measured
		}
		holdsLast := !l.Last.IsZero() && !l.Last.Before(b.Start) && l.Last.Before(end)
		// The bucket's lines came between its start and the last line
		// (or until the check looked, when the last line is later).
		busy := end
		if holdsLast {
			busy = l.Last
		}
		rate := 0.0
		if b.Count > 0 {
			rate = b.Count / max(busy.Sub(b.Start), minObserved).Minutes()
		}
		if rate > 0 && holdsLast {
			// The rest of the bucket, after the last line, had none.
			out = append(out, segment{Start: b.Start, End: l.Last, PerMinute: rate}, segment{Start: l.Last, End: end})
		} else {
			out = append(out, segment{Start: b.Start, End: end, PerMinute: rate})
		}
	}
	clipped := out[:0]
	for _, s := range out {
		if s.Start.Before(from) {
			s.Start = from
		}
		if s.End.After(to) {
			s.End = to
		}
		if s.End.After(s.Start) {
			clipped = append(clipped, s)
		}
	}
	return clipped
}

func maxRate(l *Lane) float64 {
	m := 0.0
	for _, s := range l.segments(time.Time{}, time.Unix(1<<40, 0)) {
		m = math.Max(m, s.PerMinute)
	}
	return m
}

// niceCeil rounds v up to a round number (1, 1.5, 2, 2.5, 3, 4, 5, 6 or 8
// times a power of ten, at least 1): a top for an axis that halves well.
func niceCeil(v float64) float64 {
	if v <= 1 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, f := range []float64{1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10} {
		if f*p >= v {
			return f * p
		}
	}
	return 10 * p
}
