package timeline

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/step"
	"github.com/runbot/runbot/runbooks"
)

// TestAxisTrimmedToEvidence: a run whose evidence spans its last two
// minutes, in the default 15-minute window, is drawn on an axis about
// those two minutes long, not squeezed into the last eighth of a quarter
// hour; and decode, silent since its unit started ten minutes before, is
// still drawn silent from the left edge, its rate too, with the unit's
// start written as before the edge.
func TestAxisTrimmedToEvidence(t *testing.T) {
	finished := time.Date(2026, 12, 4, 22, 31, 18, 0, time.UTC)
	unitStart := finished.Add(-10 * time.Minute)
	var decodeEvents []step.Event
	for m := 15; m > 0; m-- {
		from := finished.Add(-time.Duration(m) * time.Minute)
		decodeEvents = append(decodeEvents, step.Event{Kind: step.EventProgressRate, Time: from, End: from.Add(time.Minute)})
	}
	decodeEvents = append(decodeEvents,
		step.Event{Kind: step.EventStall, Time: unitStart, End: finished.Add(-2 * time.Second), Text: `no "Decode batch" line for 10m0s`, Labels: map[string]string{"progress": "Decode batch"}},
		step.Event{Kind: step.EventLogMatch, Time: finished.Add(-110 * time.Second), Text: "Decode transfer failed", Labels: map[string]string{"pattern": "aborts", "attribution": "unexplained"}},
		step.Event{Kind: step.EventLogMatch, Time: finished.Add(-20 * time.Second), Text: "Decode transfer failed", Labels: map[string]string{"pattern": "aborts", "attribution": "echo", "request_id": "rb-1"}},
	)
	probe := step.Event{Kind: step.EventProbe, Time: finished.Add(-60 * time.Second), End: finished.Add(-25 * time.Second),
		Labels: map[string]string{"outcome": "timeout", "phase": "first_byte", "status": "0", "request_id": "rb-1"}}
	rep := &runbooks.Report{RunID: "r-1", Runbook: "sglang-pd-wedge", StartedAt: finished.Add(-2 * time.Minute), FinishedAt: finished, Steps: []*runbooks.TargetRun{
		{Step: "last_batch", Target: "decode", Status: step.OK, StartedAt: finished.Add(-5 * time.Second), Events: decodeEvents},
		{Step: "chat", Target: "router", Status: step.OK, StartedAt: finished.Add(-60 * time.Second), Events: []step.Event{probe}},
	}}

	c, err := FromReport(rep, Options{})
	require.NoError(t, err)
	shown := c.End.Sub(c.Start)
	t.Logf("axis %s to %s (%s)", c.Start.Format(time.TimeOnly), c.End.Format(time.TimeOnly), shown)
	require.GreaterOrEqual(t, shown, 2*time.Minute, "all the evidence is shown")
	require.LessOrEqual(t, shown, 4*time.Minute, "the axis spans about the evidence, not the 15-minute window")
	require.True(t, c.Start.Before(finished.Add(-110*time.Second)), "the first error line is inside, with a margin")

	_, l, err := c.draw(Width, Height)
	require.NoError(t, err)
	require.Len(t, l.lanes, 1)
	lane := l.lanes[0].lane
	require.True(t, lane.Stalled)
	require.Equal(t, unitStart, lane.SilentSince)
	x0, x1, ok := l.stallBand(lane)
	require.True(t, ok, "the silence is drawn")
	require.Equal(t, l.left, x0, "the silence that began before the axis runs from its left edge")
	require.Greater(t, x1, l.x(finished.Add(-10*time.Second)), "and up to when decode's log was read")
	segs := lane.segments(l.t0, l.t1)
	require.NotEmpty(t, segs)
	require.Equal(t, l.t0, segs[0].Start, "decode's rate (none) is drawn from the left edge too")

	// A window the caller asks for is kept as asked.
	c, err = FromReport(rep, Options{Window: DefaultWindow})
	require.NoError(t, err)
	require.Equal(t, DefaultWindow, c.End.Sub(c.Start))
}
