package timeline

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/runbot/runbot/internal/step"
	"github.com/runbot/runbot/runbooks"
)

// FromReport builds the chart of a run from the events its checks
// recorded; it reads nothing else. It returns ErrNothingToDraw when the
// report holds no timestamped evidence at all.
func FromReport(rep *runbooks.Report, opts Options) (*Chart, error) {
	if rep == nil {
		return nil, errors.New("build timeline: no report")
	}
	c := &Chart{Markers: slices.Clone(opts.Markers)}
	slices.SortStableFunc(c.Markers, func(a, b Marker) int { return a.Time.Compare(b.Time) })
	counters := map[string]*Counter{}
	// One lane per target and progress pattern: a runbook may read the
	// same log twice (early, and again after its probe). The later read covers the
	// same window and more, so it decides the lane's last line, stall and
	// rate; the marks of every read are kept, each once.
	lanes := map[string]*Lane{}
	laneStart := map[*Lane]time.Time{}
	seenMark := map[*Lane]map[string]bool{}
	for _, tr := range rep.Steps {
		var lane *Lane
		// newest says this run is the latest read of its lane so far: only
		// then do its progress, stall and rate events count.
		newest := false
		laneOf := func() *Lane {
			if lane != nil {
				return lane
			}
			// Reads of one progress pattern on one target share a lane;
			// anything else gets a lane per step.
			key := tr.Target + "\x00step\x00" + tr.Step
			for _, ev := range tr.Events {
				if p := ev.Labels["progress"]; p != "" {
					key = tr.Target + "\x00progress\x00" + p
					break
				}
			}
			lane = lanes[key]
			if lane == nil {
				lane = &Lane{Step: tr.Step, Target: tr.Target, Host: tr.Host}
				lanes[key], seenMark[lane] = lane, map[string]bool{}
				c.Lanes = append(c.Lanes, lane)
			}
			if start, seen := laneStart[lane]; !seen || !tr.StartedAt.Before(start) {
				// A newer read of the lane: what it says replaces the older.
				laneStart[lane], newest = tr.StartedAt, true
				lane.Step, lane.Measured, lane.Stalled, lane.Rate, lane.SilentSince = tr.Step, tr.StartedAt, false, nil, time.Time{}
			}
			return lane
		}
		for _, ev := range tr.Events {
			switch ev.Kind {
			case step.EventProbe:
				c.Probes = append(c.Probes, probeWindow(tr, ev))
			case step.EventProgressRate:
				if l := laneOf(); newest {
					l.Rate = append(l.Rate, Bucket{Start: ev.Time, End: ev.End, Count: ev.Value})
				}
			case step.EventProgress:
				if l := laneOf(); newest {
					l.Last, l.LastLine = ev.Time, ev.Text
					l.Progress = progressName(ev.Text)
				}
			case step.EventStall:
				if l := laneOf(); newest {
					l.Stalled, l.SilentSince = true, ev.Time
					if !ev.End.IsZero() {
						l.Measured = ev.End
					}
				}
			case step.EventLogMatch:
				l := laneOf()
				key := ev.Time.String() + "\x00" + ev.Labels["pattern"] + "\x00" + ev.Text
				if seenMark[l][key] {
					continue
				}
				seenMark[l][key] = true
				l.Marks = append(l.Marks, Mark{
					Time: ev.Time, Pattern: ev.Labels["pattern"], Attribution: attribution(ev.Labels["attribution"]),
					RequestID: ev.Labels["request_id"], Room: ev.Labels["room"], Rid: ev.Labels["rid"], Text: ev.Text,
				})
			case step.EventSample:
				addSample(counters, &c.Counters, tr.Target, ev)
			}
		}
	}
	if len(c.Lanes) == 0 && len(c.Probes) == 0 && len(c.Counters) == 0 {
		return nil, fmt.Errorf("build timeline of run %s: %w", rep.RunID, ErrNothingToDraw)
	}
	nameLanes(c.Lanes)
	for _, l := range c.Lanes {
		l.AgesAt = rep.FinishedAt
		if l.Progress == "" {
			l.Progress = "progress"
		}
		slices.SortStableFunc(l.Marks, func(a, b Mark) int { return a.Time.Compare(b.Time) })
		slices.SortStableFunc(l.Rate, func(a, b Bucket) int { return a.Start.Compare(b.Start) })
	}
	slices.SortStableFunc(c.Probes, func(a, b Window) int { return a.Start.Compare(b.Start) })
	c.Start, c.End = span(rep, opts, c.Markers)
	if opts.Window <= 0 {
		c.Start = c.trimmedStart()
	}
	c.Title, c.Subtitle = titles(rep)
	return c, nil
}

// span is the wall time shown: Window before End, where End defaults to
// just after the run finished, or after the latest marker when that is
// later.
func span(rep *runbooks.Report, opts Options, markers []Marker) (time.Time, time.Time) {
	window := opts.Window
	if window <= 0 {
		window = DefaultWindow
	}
	end := opts.End
	if end.IsZero() {
		end = rep.FinishedAt
		if end.IsZero() {
			end = rep.StartedAt
		}
		if n := len(markers); n > 0 && markers[n-1].Time.After(end) {
			end = markers[n-1].Time
		}
		// A little room after the last thing seen, so that marks at the
		// very end are not cut in half by the edge.
		end = end.Add(window / 60)
	}
	return end.Add(-window).UTC(), end.UTC()
}

func titles(rep *runbooks.Report) (string, string) {
	title := rep.Runbook
	if len(rep.Diagnoses) > 0 {
		title += " — " + diagnosisWords(rep.Diagnoses[0])
	}
	sub := "run " + rep.RunID
	if !rep.FinishedAt.IsZero() {
		sub += ", finished " + rep.FinishedAt.UTC().Format("2006-01-02 15:04:05") + " UTC"
	}
	if len(rep.Params) > 0 {
		if d := rep.Params["deployment"]; d != "" {
			sub += ", deployment " + d
		}
	}
	return title, sub
}

// diagnosisWords is the diagnosis' first sentence, or its id.
func diagnosisWords(d runbooks.DiagnosisResult) string {
	s := strings.TrimSpace(d.Summary)
	if i := strings.Index(s, ". "); i > 0 {
		s = s[:i]
	}
	s = strings.TrimSuffix(s, ".")
	if s == "" || len(s) > 60 {
		return strings.ReplaceAll(d.ID, "_", " ")
	}
	return s
}

// nameLanes labels each lane with its target, adding the step where one
// target has several lanes.
func nameLanes(lanes []*Lane) {
	per := map[string]int{}
	for _, l := range lanes {
		per[l.Target]++
	}
	for _, l := range lanes {
		l.Name = l.Target
		if per[l.Target] > 1 {
			l.Name += " · " + l.Step
		}
	}
}

func attribution(s string) string {
	if s == Echo {
		return Echo
	}
	return Unexplained
}

// progressName shortens a progress line to what it says it is: the text
// after SGLang's "[time ranks]" prefix up to the first comma, e.g.
// "Decode batch".
func progressName(line string) string {
	s := strings.TrimSpace(line)
	if strings.HasPrefix(s, "[") {
		if i := strings.Index(s, "] "); i > 0 {
			s = s[i+2:]
		}
	}
	if i := strings.IndexAny(s, ",:;("); i > 0 {
		s = s[:i]
	}
	s = strings.TrimSpace(s)
	if r := []rune(s); len(r) > 32 {
		s = string(r[:31]) + "…"
	}
	return s
}

func probeWindow(tr *runbooks.TargetRun, ev step.Event) Window {
	w := Window{
		Step: tr.Step, Target: tr.Target, Start: ev.Time, End: ev.End,
		Outcome: ev.Labels["outcome"], Phase: ev.Labels["phase"], RequestID: ev.Labels["request_id"],
	}
	if w.End.IsZero() {
		w.End = w.Start
	}
	w.Status, _ = strconv.Atoi(ev.Labels["status"])
	w.Label = probeLabel(w)
	return w
}

// addSample adds one sampled series value to its target's counter; the
// series of a metric sampled at the same time are summed.
func addSample(byKey map[string]*Counter, list *[]*Counter, target string, ev step.Event) {
	metric := ev.Labels["metric"]
	key := target + "\x00" + metric
	c := byKey[key]
	if c == nil {
		c = &Counter{Target: target, Metric: metric, Label: metricWords(metric)}
		byKey[key] = c
		*list = append(*list, c)
	}
	if n := len(c.Points); n > 0 && c.Points[n-1].Time.Equal(ev.Time) {
		c.Points[n-1].Value += ev.Value
		if n == 1 {
			c.Series++
		}
		return
	}
	if len(c.Points) == 0 {
		c.Series = 1
	}
	c.Points = append(c.Points, Point{Time: ev.Time, Value: ev.Value})
}
