package timeline

import (
	"image/color"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// legendItem is one entry of the legend: a swatch and its words.
type legendItem struct {
	text   string
	swatch func(c draw.Canvas, at vg.Point)
}

// drawHeader draws the title, subtitle and legend and returns the y of
// the header's bottom edge.
func (c *Chart) drawHeader(dc draw.Canvas, width, height vg.Length) vg.Length {
	y := height - marginTop
	title := textStyle(20, colInk, true)
	dc.FillText(aligned(title, draw.XLeft, draw.YTop), vg.Point{X: 14, Y: y}, fit(title, c.Title, width-28))
	y -= 26
	sub := textStyle(13, colMuted, false)
	dc.FillText(aligned(sub, draw.XLeft, draw.YTop), vg.Point{X: 14, Y: y}, fit(sub, c.Subtitle, width-28))
	y -= 24
	return c.drawLegend(dc, y, width)
}

// drawLegend lays the legend out in rows from the left and returns the y
// below it.
func (c *Chart) drawLegend(dc draw.Canvas, top, width vg.Length) vg.Length {
	sty := aligned(textStyle(13, colInk, false), draw.XLeft, draw.YCenter)
	const swatchW, gap, rowH = 22, 18, 20
	x, y := vg.Length(14), top-rowH/2
	for _, it := range c.legend() {
		w := swatchW + 6 + sty.Width(it.text)
		if x+w > width-14 && x > 14 {
			x, y = 14, y-rowH
		}
		it.swatch(dc, vg.Point{X: x, Y: y})
		dc.FillText(sty, vg.Point{X: x + swatchW + 6, Y: y}, it.text)
		x += w + gap
	}
	return y - rowH/2 - 8
}

func (c *Chart) legend() []legendItem {
	var items []legendItem
	box := func(col color.Color) func(draw.Canvas, vg.Point) {
		return func(dc draw.Canvas, at vg.Point) {
			dc.FillPolygon(col, rect(at.X, at.Y-7, at.X+22, at.Y+7))
		}
	}
	if len(c.Lanes) > 0 {
		items = append(items,
			legendItem{"progress log lines per minute", func(dc draw.Canvas, at vg.Point) {
				dc.FillPolygon(colProgress, rect(at.X, at.Y-7, at.X+22, at.Y+3))
				dc.StrokeLine2(line(colProgressLn, 2), at.X, at.Y+3, at.X+22, at.Y+3)
			}},
			legendItem{"last progress line", func(dc draw.Canvas, at vg.Point) {
				dc.StrokeLine2(line(colLast, 2), at.X+11, at.Y-8, at.X+11, at.Y+8)
			}},
		)
		if c.anyStall() {
			items = append(items, legendItem{"no progress since (stall)", box(colStall)})
		}
	}
	var ok, bad bool
	for _, p := range c.Probes {
		ok, bad = ok || p.OK(), bad || !p.OK()
	}
	if bad {
		items = append(items, legendItem{"our probe: failed", box(colProbeBad)})
	}
	if ok {
		items = append(items, legendItem{"our probe: answered", box(colProbeOK)})
	}
	echo, unexpl, what := c.markKinds()
	if unexpl {
		items = append(items, legendItem{what + " not caused by us", func(dc draw.Canvas, at vg.Point) {
			drawMark(dc, Unexplained, vg.Point{X: at.X + 11, Y: at.Y})
		}})
	}
	if echo {
		items = append(items, legendItem{what + " caused by our probe (echo)", func(dc draw.Canvas, at vg.Point) {
			drawMark(dc, Echo, vg.Point{X: at.X + 11, Y: at.Y})
		}})
	}
	if len(c.Markers) > 0 {
		items = append(items, legendItem{"remediation / verification", func(dc draw.Canvas, at vg.Point) {
			dc.StrokeLine2(line(colMarker, 2, 4, 3), at.X+11, at.Y-8, at.X+11, at.Y+8)
		}})
	}
	return items
}

func (c *Chart) anyStall() bool {
	for _, l := range c.Lanes {
		if l.Stalled && !l.Last.IsZero() {
			return true
		}
	}
	return false
}

// markKinds says which attributions occur and what to call the lines: the
// pattern's name when there is one, else "error line".
func (c *Chart) markKinds() (echo, unexpl bool, what string) {
	var patterns []string
	for _, l := range c.Lanes {
		for _, m := range l.Marks {
			echo, unexpl = echo || m.Echo(), unexpl || !m.Echo()
			if !contains(patterns, m.Pattern) {
				patterns = append(patterns, m.Pattern)
			}
		}
	}
	what = "error lines"
	if len(patterns) == 1 && patterns[0] != "" {
		what = patterns[0]
	}
	return echo, unexpl, what
}

// fit shortens s with an ellipsis until it is at most w wide.
func fit(sty draw.TextStyle, s string, w vg.Length) string {
	if sty.Width(s) <= w {
		return s
	}
	r := []rune(s)
	for len(r) > 1 && sty.Width(string(r)+"…") > w {
		r = r[:len(r)-1]
	}
	return string(r) + "…"
}

func rect(x0, y0, x1, y1 vg.Length) []vg.Point {
	return []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}}
}
