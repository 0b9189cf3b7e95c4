package timeline

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// drawLane draws one engine's lane: its progress rate over time, where the
// progress stopped, this run's probe windows, and its error lines.
func (c *Chart) drawLane(dc draw.Canvas, l *layout, b laneBox) {
	lane, r, v := b.lane, b.rect, b.values
	dc.FillPolygon(colLaneBG, rect(r.Min.X, r.Min.Y, r.Max.X, r.Max.Y))
	l.drawGrid(dc, r)
	if x0, x1, ok := l.stallBand(lane); ok {
		dc.FillPolygon(colStall, rect(x0, v.Min.Y, x1, r.Max.Y))
	}
	c.drawProbeBands(dc, l, r)
	c.drawAfterRun(dc, l, b)

	// Values: 0 at the bottom of the value area, yMax at its top.
	y := func(perMinute float64) vg.Length {
		return v.Min.Y + vg.Length(perMinute/b.yMax)*(v.Max.Y-v.Min.Y)
	}
	segs := lane.segments(l.t0, l.t1)
	for _, s := range segs {
		if s.PerMinute > 0 {
			dc.FillPolygon(colProgress, rect(l.x(s.Start), v.Min.Y, l.x(s.End), y(s.PerMinute)))
		}
	}
	var pts []vg.Point
	for _, s := range segs {
		pts = append(pts, vg.Point{X: l.x(s.Start), Y: y(s.PerMinute)}, vg.Point{X: l.x(s.End), Y: y(s.PerMinute)})
	}
	if len(pts) > 0 {
		dc.StrokeLines(line(colProgressLn, 2), pts)
	}
	dc.StrokeLines(line(colFrame, 1), []vg.Point{r.Min, {X: r.Max.X, Y: r.Min.Y}, r.Max, {X: r.Min.X, Y: r.Max.Y}, r.Min})

	c.drawMarks(dc, l, b)
	c.drawLastProgress(dc, l, b)
	drawYTicks(dc, b)
	drawLaneTitle(dc, r, lane.Name, lane.Host, fmt.Sprintf("%q", lane.Progress), "lines per minute")
}

// stallBand is the stretch of a stalled lane drawn as silence: from the
// last progress line, or from the unit's start when it logged none since,
// to when the check looked; a silence that began before the chart's left
// edge is drawn from that edge, so a trimmed axis loses none of it.
func (l *layout) stallBand(lane *Lane) (x0, x1 vg.Length, ok bool) {
	from := lane.Last
	if from.IsZero() {
		from = lane.SilentSince
	}
	if !lane.Stalled || from.IsZero() || lane.Measured.Before(l.t0) {
		return 0, 0, false
	}
	return l.clampX(l.x(from)), l.clampX(l.x(lane.Measured)), true
}

// drawAfterRun greys the part of a lane after the check looked, when the
// chart reaches well past it (to show a remediation): an empty lane there
// means "not looked at", not "no progress".
func (c *Chart) drawAfterRun(dc draw.Canvas, l *layout, b laneBox) {
	from := b.lane.Measured
	if from.IsZero() || l.x(l.t1)-l.x(from) < 40 {
		return
	}
	x0 := l.clampX(l.x(from))
	dc.FillPolygon(colAfter, rect(x0, b.rect.Min.Y, l.right, b.values.Max.Y))
	sty := aligned(textStyle(11, colMuted, false), draw.XCenter, draw.YBottom)
	if w := sty.Width("not observed"); l.right-x0 > w+8 {
		dc.FillText(sty, vg.Point{X: (x0 + l.right) / 2, Y: b.rect.Min.Y + 4}, "not observed")
	}
}

// drawLastProgress marks the last progress line and says how long ago it
// was: the one number an on-call engineer wants first.
func (c *Chart) drawLastProgress(dc draw.Canvas, l *layout, b laneBox) {
	lane := b.lane
	v := b.values
	if lane.Last.IsZero() {
		text := fmt.Sprintf("no %q line in the log read", lane.Progress)
		if !lane.SilentSince.IsZero() {
			text = fmt.Sprintf("no %q line since the unit started, %s", lane.Progress, clock(lane.SilentSince))
			if lane.SilentSince.Before(l.t0) {
				text = "← " + text
			}
		}
		sty := aligned(textStyle(14, colLast, true), draw.XCenter, draw.YCenter)
		dc.FillText(sty, vg.Point{X: (v.Min.X + v.Max.X) / 2, Y: (v.Min.Y + v.Max.Y) / 2}, text)
		return
	}
	if lane.Last.Before(l.t0) {
		sty := aligned(textStyle(14, colLast, true), draw.XLeft, draw.YTop)
		dc.FillText(sty, vg.Point{X: v.Min.X + 8, Y: v.Max.Y - 6}, "← "+lastProgressLabel(lane))
		return
	}
	x := l.x(lane.Last)
	col, width, size := colLast, vg.Length(2.5), 14.0
	if !lane.Stalled {
		col, width, size = colMuted, 1.5, 12
	}
	if x <= l.right {
		dc.StrokeLine2(line(col, width), x, v.Min.Y, x, b.rect.Max.Y)
	}
	l.label(dc, textStyle(size, col, lane.Stalled), lastProgressLabel(lane), x, v.Max.Y-6, true)
}

// drawMarks marks the lane's error lines in the strip at its top: lines
// nobody here caused on the upper row, echoes of our probes below. Lines
// within a few pixels of each other share one mark with a count.
func (c *Chart) drawMarks(dc draw.Canvas, l *layout, b laneBox) {
	top := b.rect.Max.Y
	rows := map[string]vg.Length{Unexplained: top - 9, Echo: top - 22}
	type group struct {
		x     vg.Length
		n     int
		attr  string
		first vg.Length
	}
	var groups []*group
	last := map[string]*group{}
	for _, m := range b.lane.Marks {
		if m.Time.Before(l.t0) || m.Time.After(l.t1) {
			continue
		}
		x := l.x(m.Time)
		if g := last[m.Attribution]; g != nil && x-g.first <= 6 {
			g.n++
			continue
		}
		g := &group{x: x, n: 1, attr: m.Attribution, first: x}
		groups = append(groups, g)
		last[m.Attribution] = g
	}
	count := textStyle(11, colInk, true)
	count.YAlign = draw.YCenter
	for _, g := range groups {
		pt := vg.Point{X: g.x, Y: rows[g.attr]}
		dc.StrokeLine2(line(markColor(g.attr), 1), g.x, b.values.Max.Y, g.x, pt.Y-5)
		drawMark(dc, g.attr, pt)
		if g.n > 1 {
			dc.FillText(count, vg.Point{X: g.x + 7, Y: pt.Y}, fmt.Sprintf("×%d", g.n))
		}
	}
}

func markColor(attr string) color.Color {
	if attr == Echo {
		return colEcho
	}
	return colUnexpl
}

// drawMark draws one error-line mark: a filled triangle for a line nobody
// here caused, a ring for an echo of our own probe (shape and colour both
// differ, for readers who cannot tell the colours apart).
func drawMark(dc draw.Canvas, attr string, pt vg.Point) {
	if attr == Echo {
		ring := draw.LineStyle{Color: colEcho, Width: 2}
		dc.StrokeLines(ring, circle(pt, 5))
		return
	}
	dc.DrawGlyphNoClip(draw.GlyphStyle{Color: colUnexpl, Radius: 6, Shape: draw.PyramidGlyph{}}, pt)
}

// drawProbeLane draws this run's probes, one row per probe step, each as a
// bar from its start to its end, coloured by whether it was answered.
func (c *Chart) drawProbeLane(dc draw.Canvas, l *layout) {
	r := l.probes
	dc.FillPolygon(colLaneBG, rect(r.Min.X, r.Min.Y, r.Max.X, r.Max.Y))
	l.drawGrid(dc, r)
	c.drawProbeBands(dc, l, r)
	dc.StrokeLines(line(colFrame, 1), []vg.Point{r.Min, {X: r.Max.X, Y: r.Min.Y}, r.Max, {X: r.Min.X, Y: r.Max.Y}, r.Min})
	label := textStyle(13, colInk, false)
	for _, p := range c.Probes {
		if p.End.Before(l.t0) || p.Start.After(l.t1) {
			continue
		}
		row := indexOf(l.probeRows, p.Step)
		yc := r.Max.Y - 4 - vg.Length(row)*probeRow - probeRow/2
		x0, x1 := l.clampX(l.x(p.Start)), l.clampX(l.x(p.End))
		if x1-x0 < 3 {
			x1 = x0 + 3
		}
		col := colProbeOK
		if !p.OK() {
			col = colProbeBad
		}
		dc.FillPolygon(col, rect(x0, yc-7, x1, yc+7))
		if x1+6+label.Width(p.Label) <= l.right-4 {
			l.label(dc, label, p.Label, x1, yc+7, false)
		} else {
			l.label(dc, label, p.Label, x0-label.Width(p.Label)-12, yc+7, false)
		}
	}
	drawLaneTitle(dc, r, "our probes", "this run's requests")
}

// drawProbeBands shades each probe's window across a lane, so that what
// happened during our own requests lines up with them.
func (c *Chart) drawProbeBands(dc draw.Canvas, l *layout, r vg.Rectangle) {
	for _, p := range c.Probes {
		if p.End.Before(l.t0) || p.Start.After(l.t1) {
			continue
		}
		x0, x1 := l.clampX(l.x(p.Start)), l.clampX(l.x(p.End))
		if x1-x0 < 2 {
			x1 = x0 + 2
		}
		col := colBandOK
		if !p.OK() {
			col = colBandBad
		}
		dc.FillPolygon(col, rect(x0, r.Min.Y, x1, r.Max.Y))
	}
}

// drawMarkers draws the caller's markers (remediation, verification) as
// dashed lines across every lane, labelled at the top.
func (c *Chart) drawMarkers(dc draw.Canvas, l *layout) {
	sty := markerStyle()
	sty.XAlign, sty.YAlign = draw.XLeft, draw.YTop
	for _, m := range l.markers {
		dc.StrokeLine2(line(colMarker, 2, 6, 4), m.x, l.lanesBottom, m.x, l.lanesTop)
		if m.shown {
			dc.FillText(sty, vg.Point{X: m.box.Min.X, Y: m.box.Max.Y}, m.text)
		}
	}
}

// label writes text with its top at y beside x: to the right when it
// fits, else to the left, else wherever it stays inside the lanes. With
// backing, a white box under it keeps it readable over what is drawn.
func (l *layout) label(dc draw.Canvas, sty draw.TextStyle, text string, x, y vg.Length, backing bool) {
	w := sty.Width(text)
	left := l.labelLeft(x, w)
	sty.XAlign, sty.YAlign = draw.XLeft, draw.YTop
	if backing {
		h := sty.Height(text)
		dc.FillPolygon(colLabelBG, rect(left-3, y-h-2, left+w+3, y+2))
	}
	dc.FillText(sty, vg.Point{X: left, Y: y}, text)
}

// drawGrid draws a light vertical line at each time tick.
func (l *layout) drawGrid(dc draw.Canvas, r vg.Rectangle) {
	for _, t := range l.ticks {
		x := l.x(t)
		dc.StrokeLine2(line(colGrid, 1), x, r.Min.Y, x, r.Max.Y)
	}
}

func (l *layout) clampX(x vg.Length) vg.Length {
	return min(max(x, l.left), l.right)
}

// drawLaneTitle writes a lane's name and what it shows in the left margin.
func drawLaneTitle(dc draw.Canvas, r vg.Rectangle, name string, more ...string) {
	name = fit(textStyle(15, colInk, true), name, marginLeft-50)
	dc.FillText(aligned(textStyle(15, colInk, true), draw.XLeft, draw.YTop), vg.Point{X: 14, Y: r.Max.Y - 2}, name)
	y := r.Max.Y - 22
	sty := aligned(textStyle(12, colMuted, false), draw.XLeft, draw.YTop)
	for _, s := range more {
		if s == "" || y-14 < r.Min.Y {
			continue
		}
		dc.FillText(sty, vg.Point{X: 14, Y: y}, fit(sty, s, marginLeft-50))
		y -= 15
	}
}

// drawYTicks labels a lane's rate axis at 0, half and the top.
func drawYTicks(dc draw.Canvas, b laneBox) {
	sty := aligned(textStyle(11, colMuted, false), draw.XRight, draw.YCenter)
	v := b.values
	for _, f := range []float64{0, 0.5, 1} {
		y := v.Min.Y + vg.Length(f)*(v.Max.Y-v.Min.Y)
		dc.StrokeLine2(line(colFrame, 1), v.Min.X-4, y, v.Min.X, y)
		dc.FillText(sty, vg.Point{X: v.Min.X - 7, Y: y}, number(f*b.yMax))
	}
}

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return 0
}

// circle is a closed polyline around c.
func circle(c vg.Point, r vg.Length) []vg.Point {
	const n = 16
	pts := make([]vg.Point, 0, n+1)
	for i := range n + 1 {
		a := 2 * math.Pi * float64(i) / n
		pts = append(pts, vg.Point{X: c.X + r*vg.Length(math.Cos(a)), Y: c.Y + r*vg.Length(math.Sin(a))})
	}
	return pts
}
