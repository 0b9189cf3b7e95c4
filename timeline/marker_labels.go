package timeline

import (
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// maxMarkerRows bounds the rows of marker labels above the lanes; a
// label that finds no room in any of them is left out (its line stays).
const maxMarkerRows = 6

// markerLabel is where one marker's line and label go.
type markerLabel struct {
	x    vg.Length
	text string
	// box is the label's extent; shown is false when no row had room.
	box   vg.Rectangle
	row   int
	shown bool
}

// markerStyle is how marker labels are written.
func markerStyle() draw.TextStyle { return textStyle(12, colMarker, true) }

// placeMarkerLabels puts each marker's label in the first row, from the
// top, where it overlaps no label already there: a remediation's events
// (approved, applied, verified) often come seconds apart, and labels one
// beside the other would be written over each other. It returns the
// labels in time order and how many rows they take.
func (l *layout) placeMarkerLabels(markers []Marker, sty draw.TextStyle) ([]markerLabel, int) {
	const gap = 6
	var out []markerLabel
	rows := 0
	for _, m := range markers {
		if m.Time.Before(l.t0) || m.Time.After(l.t1) {
			continue
		}
		ml := markerLabel{x: l.x(m.Time), text: m.Label + " " + clock(m.Time)}
		w, h := sty.Width(ml.text), sty.Height(ml.text)
		left := l.labelLeft(ml.x, w)
		for row := range maxMarkerRows {
			top := l.markerTop - 2 - vg.Length(row)*markerRow
			box := vg.Rectangle{Min: vg.Point{X: left, Y: top - h}, Max: vg.Point{X: left + w, Y: top}}
			free := true
			for _, o := range out {
				if o.shown && o.row == row && box.Min.X < o.box.Max.X+gap && o.box.Min.X < box.Max.X+gap {
					free = false
					break
				}
			}
			if free {
				ml.box, ml.row, ml.shown = box, row, true
				rows = max(rows, row+1)
				break
			}
		}
		out = append(out, ml)
	}
	return out, rows
}

// labelLeft is where a label of width w beside x starts: to the right
// when it fits, else to the left, and inside the lanes either way.
func (l *layout) labelLeft(x, w vg.Length) vg.Length {
	const pad = 6
	left := x + pad
	if left+w > l.right-4 {
		left = x - pad - w
	}
	return max(min(left, l.right-4-w), l.left+4)
}
