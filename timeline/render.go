package timeline

import (
	"fmt"
	"image"
	"io"
	"time"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// The smallest picture Render draws; below it the labels collide.
const (
	MinWidth  = 640
	MinHeight = 420
)

// Render draws the chart as a PNG picture of width × height pixels
// (1200 × 800 reads well in Slack's preview).
func (c *Chart) Render(w io.Writer, width, height int) error {
	img, _, err := c.draw(width, height)
	if err != nil {
		return err
	}
	if err := encodePNG(w, img); err != nil {
		return fmt.Errorf("render timeline: encode png: %w", err)
	}
	return nil
}

// Fixed parts of the layout, in pixels.
const (
	marginLeft   = 160 // lane names and y ticks
	marginRight  = 28
	marginTop    = 12
	laneGap      = 10
	marksStrip   = 30 // top of an engine lane, where error lines are marked
	probeRow     = 22
	axisHeight   = 42
	counterRow   = 92
	counterHead  = 30
	counterPanel = 4 // panels per target
	// minLaneHeight is the least an engine lane needs to show a cliff.
	minLaneHeight = 110
	markerRow     = 15
)

// layout is where everything goes, in vg units (one per pixel, origin at
// the bottom left).
type layout struct {
	width, height int
	t0, t1        time.Time
	left, right   vg.Length
	probes        vg.Rectangle
	probeRows     []string
	lanes         []laneBox
	// lanesTop and lanesBottom bound everything that shares the time axis.
	lanesTop, lanesBottom vg.Length
	counters              vg.Rectangle
	counterRows           [][]*Counter
	// ticks are the labelled times of the shared axis.
	ticks []time.Time
	// markerTop is the top of the marker labels' strip.
	markerTop vg.Length
	// markers are the markers inside the span, with their labels placed.
	markers []markerLabel
}

// laneBox is an engine lane's place: rect is all of it, values the part
// below the marks strip where the progress rate is drawn.
type laneBox struct {
	lane   *Lane
	rect   vg.Rectangle
	values vg.Rectangle
	yMax   float64
}

// x maps a wall time to the horizontal position on the shared time axis.
func (l *layout) x(t time.Time) vg.Length {
	span := l.t1.Sub(l.t0).Seconds()
	return l.left + vg.Length(t.Sub(l.t0).Seconds()/span)*(l.right-l.left)
}

// pixel is the image pixel that holds the vg point p.
func (l *layout) pixel(p vg.Point) image.Point {
	return image.Pt(int(p.X), l.height-1-int(p.Y))
}

func (c *Chart) layout(width, height int, header vg.Length) *layout {
	l := &layout{width: width, height: height, t0: c.Start, t1: c.End,
		left: marginLeft, right: vg.Length(width - marginRight)}
	bottom := vg.Length(8)
	l.markerTop = header
	var markerRowsUsed int
	l.markers, markerRowsUsed = l.placeMarkerLabels(c.Markers, markerStyle())
	l.counterRows = pickCounters(c.Counters, counterPanel)
	// The lanes come first: counters get the room the lanes can spare.
	need := header - vg.Length(markerRowsUsed*markerRow) - bottom - axisHeight - vg.Length(len(c.Lanes))*(minLaneHeight+laneGap) - 2*probeRow - 8
	for len(l.counterRows) > 0 && vg.Length(counterHead+len(l.counterRows)*counterRow+6) > need {
		l.counterRows = l.counterRows[:len(l.counterRows)-1]
	}
	if n := len(l.counterRows); n > 0 {
		h := vg.Length(counterHead + n*counterRow)
		l.counters = vg.Rectangle{Min: vg.Point{X: 0, Y: bottom}, Max: vg.Point{X: vg.Length(width), Y: bottom + h}}
		bottom += h + 6
	}
	l.lanesBottom = bottom + axisHeight
	top := header
	if markerRowsUsed > 0 {
		// Marker labels get a strip of their own above the lanes.
		top -= vg.Length(markerRowsUsed*markerRow + 4)
	}
	l.lanesTop = top
	for _, p := range c.Probes {
		if !contains(l.probeRows, p.Step) {
			l.probeRows = append(l.probeRows, p.Step)
		}
	}
	if n := len(l.probeRows); n > 0 {
		h := vg.Length(max(2, n)*probeRow + 8)
		l.probes = vg.Rectangle{Min: vg.Point{X: l.left, Y: top - h}, Max: vg.Point{X: l.right, Y: top}}
		top -= h + laneGap
	}
	if n := len(c.Lanes); n > 0 {
		each := (top - l.lanesBottom - vg.Length(n-1)*laneGap) / vg.Length(n)
		for _, lane := range c.Lanes {
			r := vg.Rectangle{Min: vg.Point{X: l.left, Y: top - each}, Max: vg.Point{X: l.right, Y: top}}
			vals := r
			vals.Max.Y -= marksStrip
			l.lanes = append(l.lanes, laneBox{lane: lane, rect: r, values: vals, yMax: niceCeil(maxRate(lane) * 1.15)})
			top -= each + laneGap
		}
	} else if l.probes.Max.Y > 0 {
		// Only probes: let their lane reach down to the axis.
		l.probes.Min.Y = l.lanesBottom
	}
	return l
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// draw renders the chart onto a fresh image and says where it put things.
func (c *Chart) draw(width, height int) (image.Image, *layout, error) {
	if width < MinWidth || height < MinHeight {
		return nil, nil, fmt.Errorf("render timeline: %d×%d is too small (at least %d×%d)", width, height, MinWidth, MinHeight)
	}
	if !c.End.After(c.Start) {
		return nil, nil, fmt.Errorf("render timeline: empty time span %s to %s", c.Start, c.End)
	}
	cv := vgimg.NewWith(vgimg.UseWH(vg.Length(width), vg.Length(height)), vgimg.UseDPI(dpi))
	dc := draw.New(cv)
	header := c.drawHeader(dc, vg.Length(width), vg.Length(height))
	l := c.layout(width, height, header)
	if l.lanesTop-l.lanesBottom < 80 {
		return nil, nil, fmt.Errorf("render timeline: %d×%d leaves no room for the lanes", width, height)
	}
	l.ticks = timeTicks(c.Start, c.End, int(l.right-l.left)/110)
	if l.probes.Max.Y > 0 {
		c.drawProbeLane(dc, l)
	}
	for _, b := range l.lanes {
		c.drawLane(dc, l, b)
	}
	c.drawMarkers(dc, l)
	drawTimeAxis(dc, l)
	if len(l.counterRows) > 0 {
		drawCounters(dc, l)
	}
	return cv.Image(), l, nil
}
