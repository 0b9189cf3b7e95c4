package timeline

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// counterPriority orders SGLang's metrics by how much they say about a
// stuck request path; metrics not listed come after, in sampled order.
var counterPriority = []string{
	"sglang:num_running_reqs",
	"sglang:num_prefill_inflight_queue_reqs",
	"sglang:num_decode_transfer_queue_reqs",
	"sglang:num_decode_prealloc_queue_reqs",
	"sglang:num_queue_reqs",
	"sglang:num_prefill_prealloc_queue_reqs",
	"sglang:num_prefill_bootstrap_queue_reqs",
	"sglang:gen_throughput",
	"sglang:num_transfer_failed_reqs_total",
}

// pickCounters chooses up to perTarget counters for each target, one row
// per target in sampled order. A metric about the other kind of engine
// (a decode queue sampled on prefill) is left out while it reads zero, and
// so is a running total that did not move: neither says anything.
func pickCounters(all []*Counter, perTarget int) [][]*Counter {
	var targets []string
	byTarget := map[string][]*Counter{}
	for _, c := range all {
		if len(c.Points) == 0 || !relevant(c) {
			continue
		}
		if _, ok := byTarget[c.Target]; !ok {
			targets = append(targets, c.Target)
		}
		byTarget[c.Target] = append(byTarget[c.Target], c)
	}
	rank := func(c *Counter) int {
		if i := slices.Index(counterPriority, c.Metric); i >= 0 {
			return i
		}
		return len(counterPriority)
	}
	var rows [][]*Counter
	for _, t := range targets {
		cs := byTarget[t]
		slices.SortStableFunc(cs, func(a, b *Counter) int { return rank(a) - rank(b) })
		rows = append(rows, cs[:min(len(cs), perTarget)])
	}
	return rows
}

func relevant(c *Counter) bool {
	quiet := !c.Changed() && c.Max() == 0
	if strings.HasSuffix(c.Metric, "_total") && !c.Changed() {
		return false
	}
	target := strings.ToLower(c.Target)
	switch {
	case strings.Contains(c.Metric, "_decode_") && strings.Contains(target, "prefill"):
		return !quiet
	case strings.Contains(c.Metric, "_prefill_") && strings.Contains(target, "decode"):
		return !quiet
	}
	return true
}

// drawCounters draws the sampled counters as small step plots, a row per
// target. They share their own time axis: the seconds the run sampled
// over, too short to see on the lanes' quarter hour.
func drawCounters(dc draw.Canvas, l *layout) {
	r := l.counters
	from, to := counterSpan(l.counterRows)
	head := aligned(textStyle(14, colInk, true), draw.XLeft, draw.YTop)
	title := fmt.Sprintf("Counters this run sampled, %s to %s (%d samples each; series summed)",
		from.UTC().Format("15:04:05"), clock(to), samplesOf(l.counterRows))
	dc.FillText(head, vg.Point{X: 14, Y: r.Max.Y - 4}, fit(head, title, r.Max.X-28))
	const gap = 18
	panelW := (l.right - l.left - gap*(counterPanel-1)) / counterPanel
	top := r.Max.Y - counterHead
	for _, row := range l.counterRows {
		box := vg.Rectangle{Min: vg.Point{X: l.left, Y: top - counterRow + 8}, Max: vg.Point{X: l.right, Y: top}}
		drawLaneTitle(dc, box, row[0].Target)
		for i, c := range row {
			x0 := l.left + vg.Length(i)*(panelW+gap)
			drawCounter(dc, c, vg.Rectangle{Min: vg.Point{X: x0, Y: box.Min.Y}, Max: vg.Point{X: x0 + panelW, Y: box.Max.Y}}, from, to)
		}
		top -= counterRow
	}
}

// drawCounter draws one counter's samples as a step plot in r.
func drawCounter(dc draw.Canvas, c *Counter, r vg.Rectangle, from, to time.Time) {
	name := aligned(textStyle(12, colInk, false), draw.XLeft, draw.YTop)
	label := c.Label
	if c.Series > 1 {
		label += fmt.Sprintf(" (%d series)", c.Series)
	}
	dc.FillText(name, vg.Point{X: r.Min.X, Y: r.Max.Y}, fit(name, label, r.Max.X-r.Min.X))
	plot := r
	plot.Max.Y -= 18
	plot.Min.X += 30
	plot.Max.X -= 34
	dc.FillPolygon(colLaneBG, rect(plot.Min.X, plot.Min.Y, plot.Max.X, plot.Max.Y))
	dc.StrokeLines(line(colFrame, 1), []vg.Point{plot.Min, {X: plot.Max.X, Y: plot.Min.Y}, plot.Max, {X: plot.Min.X, Y: plot.Max.Y}, plot.Min})
	top := niceCeil(c.Max() * 1.1)
	if c.Max() == 0 {
		top = 1
	}
	span := to.Sub(from).Seconds()
	x := func(t time.Time) vg.Length {
		if span <= 0 {
			return (plot.Min.X + plot.Max.X) / 2
		}
		return plot.Min.X + 4 + vg.Length(t.Sub(from).Seconds()/span)*(plot.Max.X-plot.Min.X-8)
	}
	y := func(v float64) vg.Length {
		return plot.Min.Y + 3 + vg.Length(v/top)*(plot.Max.Y-plot.Min.Y-6)
	}
	var pts []vg.Point
	for i, p := range c.Points {
		if i > 0 {
			pts = append(pts, vg.Point{X: x(p.Time), Y: y(c.Points[i-1].Value)})
		}
		pts = append(pts, vg.Point{X: x(p.Time), Y: y(p.Value)})
	}
	dc.StrokeLines(line(colCounter, 2), pts)
	for _, p := range pts {
		dc.DrawGlyphNoClip(draw.GlyphStyle{Color: colCounter, Radius: 2.5, Shape: draw.CircleGlyph{}}, p)
	}
	tick := aligned(textStyle(10, colMuted, false), draw.XRight, draw.YCenter)
	dc.FillText(tick, vg.Point{X: plot.Min.X - 4, Y: y(0)}, "0")
	dc.FillText(tick, vg.Point{X: plot.Min.X - 4, Y: y(top)}, number(top))
	last := c.Points[len(c.Points)-1]
	val := aligned(textStyle(13, colCounter, true), draw.XLeft, draw.YCenter)
	dc.FillText(val, vg.Point{X: plot.Max.X + 5, Y: y(last.Value)}, number(last.Value))
}

// counterSpan is the time from the first sample to the last, over all
// shown counters.
func counterSpan(rows [][]*Counter) (from, to time.Time) {
	for _, row := range rows {
		for _, c := range row {
			for _, p := range c.Points {
				if from.IsZero() || p.Time.Before(from) {
					from = p.Time
				}
				if p.Time.After(to) {
					to = p.Time
				}
			}
		}
	}
	return from, to
}

func samplesOf(rows [][]*Counter) int {
	n := 0
	for _, row := range rows {
		for _, c := range row {
			n = max(n, len(c.Points))
		}
	}
	return n
}
