package timeline

import (
	"errors"
	"time"

	"github.com/runbot/runbot/internal/step"
)

// DefaultWindow is how much time a chart shows when Options.Window is zero:
// the quarter hour before the run finished, which is also how far back
// log_progress reads by default.
const DefaultWindow = 15 * time.Minute

// ErrNothingToDraw is returned for a report whose checks recorded no
// timestamped evidence (no probes, log progress, error lines or samples).
var ErrNothingToDraw = errors.New("the run recorded nothing a timeline can show")

// Options tune what a chart shows. The zero value is the default chart.
type Options struct {
	// Window is the span of wall time shown. When zero, it is at most
	// DefaultWindow, trimmed to what the run saw (see Chart.trimmedStart).
	Window time.Duration
	// End is the right edge of the chart; when zero, just after the run
	// finished (a sixtieth of the window), or after the latest marker when
	// one is later.
	End time.Time
	// Markers are things that happened to the service besides the run,
	// drawn as vertical lines across every lane: a remediation's actions,
	// its verification, a deploy the caller knows about.
	Markers []Marker
}

// Marker is a labelled moment drawn across the whole chart.
type Marker struct {
	Time  time.Time
	Label string
}

// Chart is what a run's timeline shows, in data terms. FromReport builds
// it; Render draws it.
type Chart struct {
	// Title names the runbook and the diagnosis; Subtitle the run.
	Title    string
	Subtitle string
	// Start and End bound the wall time shown.
	Start, End time.Time
	// Lanes holds one lane per log that a log_progress step read (one per
	// engine in the SGLang runbook), in the report's step order.
	Lanes []*Lane
	// Probes are this run's own requests, oldest first.
	Probes []Window
	// Counters are the sampled metrics, one per target and metric, with
	// the series of a metric summed at each sample (as the checks do).
	Counters []*Counter
	Markers  []Marker
}

// Lane is one log's progress and error lines.
type Lane struct {
	// Name labels the lane: the target, with the step when the target has
	// more than one lane.
	Name   string
	Step   string
	Target string
	Host   string
	// Progress names the progress line, e.g. "Decode batch", taken from
	// the last progress line found.
	Progress string
	// Rate holds the progress lines counted per bucket (one per minute by
	// default), empty buckets included: absence is evidence.
	Rate []Bucket
	// Last is the time of the last progress line; zero when the log read
	// had none.
	Last time.Time
	// LastLine is that line's message.
	LastLine string
	// Measured is when the check looked: the gap since Last runs to it.
	Measured time.Time
	// AgesAt is the instant the report counts its ages to: the run's end.
	AgesAt time.Time
	// Stalled says the check judged the gap a stall.
	Stalled bool
	// SilentSince is when the stall began: the last progress line, or the
	// unit's start when it logged none since. It may be before the chart's
	// left edge, and the silence is then drawn from that edge.
	SilentSince time.Time
	// Marks are the matched error lines (one per distinct request), oldest
	// first.
	Marks []Mark
}

// Gap is the time from the last progress line to when the check looked;
// zero when no progress line was found, or when the line was logged while
// the check read (its stamp after the moment the read began), which would
// otherwise read as "-568ms ago".
func (l *Lane) Gap() time.Duration {
	if l.Last.IsZero() {
		return 0
	}
	return max(l.Measured.Sub(l.Last), 0)
}

// Age is how long before AgesAt the last progress line was, as the run's
// report counts it, so the picture and the report give one line one
// age; the Gap when AgesAt is zero, and never negative.
func (l *Lane) Age() time.Duration {
	if l.Last.IsZero() || l.AgesAt.IsZero() {
		return l.Gap()
	}
	return max(l.AgesAt.Sub(l.Last), 0)
}

// Bucket is the count of progress lines between Start and End.
type Bucket struct {
	Start, End time.Time
	Count      float64
}

// Mark is one occurrence of an error pattern in a log.
type Mark struct {
	Time    time.Time
	Pattern string
	// Attribution is Echo or Unexplained.
	Attribution string
	// RequestID names the probe the line was attributed to, when any.
	RequestID string
	Room      string
	Rid       string
	Text      string
}

// Echo reports whether this run's own probe caused the line.
func (m Mark) Echo() bool { return m.Attribution == Echo }

// Window is one of this run's own probes, from its start to its end.
type Window struct {
	Step   string
	Target string
	Start  time.Time
	End    time.Time
	// Outcome is the probe's one word: ok, bad_status, timeout, refused
	// or error. Phase says where a probe that fell short stopped.
	Outcome   string
	Phase     string
	Status    int
	RequestID string
	// Label says what happened in an on-call engineer's words, e.g.
	// "chat: no answer, gave up after 35s".
	Label string
}

// OK reports whether the probe got a complete, expected answer.
func (w Window) OK() bool { return w.Outcome == step.ProbeOK }

// Counter is one metric sampled on one target.
type Counter struct {
	Target string
	Metric string
	// Label is the metric in words, e.g. "running requests".
	Label string
	// Series is how many series were summed.
	Series int
	Points []Point
}

// Point is one sampled value.
type Point struct {
	Time  time.Time
	Value float64
}

// Changed reports whether the sampled value moved.
func (c *Counter) Changed() bool {
	for _, p := range c.Points {
		if p.Value != c.Points[0].Value {
			return true
		}
	}
	return false
}

// Max is the largest sampled value.
func (c *Counter) Max() float64 {
	m := 0.0
	for i, p := range c.Points {
		if i == 0 || p.Value > m {
			m = p.Value
		}
	}
	return m
}
