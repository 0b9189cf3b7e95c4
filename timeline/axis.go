package timeline

import (
	"math"
	"strconv"
	"time"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// tickSteps are the spacings a time axis may use, finest first.
var tickSteps = []time.Duration{
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour,
}

// timeTicks returns round wall times in [from, to], at most about max of
// them, at the finest spacing that allows it.
func timeTicks(from, to time.Time, maxTicks int) []time.Time {
	maxTicks = max(maxTicks, 2)
	step := tickSteps[len(tickSteps)-1]
	for _, s := range tickSteps {
		if int(to.Sub(from)/s) <= maxTicks {
			step = s
			break
		}
	}
	var ticks []time.Time
	for t := from.UTC().Truncate(step); !t.After(to); t = t.Add(step) {
		if !t.Before(from) {
			ticks = append(ticks, t)
		}
	}
	return ticks
}

// tickLabel writes a tick's time in UTC with the zone, to the minute when
// the ticks are whole minutes.
func tickLabel(t time.Time, ticks []time.Time) string {
	layout := "15:04"
	for _, x := range ticks {
		if x.Second() != 0 {
			layout = "15:04:05"
			break
		}
	}
	return t.UTC().Format(layout) + " UTC"
}

// drawTimeAxis labels the shared time axis below the lanes.
func drawTimeAxis(dc draw.Canvas, l *layout) {
	y := l.lanesBottom
	sty := aligned(textStyle(13, colInk, false), draw.XCenter, draw.YTop)
	for _, t := range l.ticks {
		x := l.x(t)
		dc.StrokeLine2(line(colFrame, 1), x, y, x, y-5)
		label := tickLabel(t, l.ticks)
		if half := sty.Width(label) / 2; x+half > vg.Length(l.width)-2 {
			continue // it would be cut by the picture's edge
		}
		dc.FillText(sty, vg.Point{X: x, Y: y - 8}, label)
	}
	caption := aligned(textStyle(12, colMuted, false), draw.XRight, draw.YTop)
	dc.FillText(caption, vg.Point{X: l.right, Y: y - 26}, "wall time (UTC), "+duration(l.t1.Sub(l.t0))+" up to "+clock(l.t1))
}

// number writes a value without needless decimals: 0, 12, 2.5, 0.031.
func number(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}
