package timeline

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestMarkerLabelsDoNotOverlap: a remediation's events a second or two
// apart (approved, the restart, the plan done, the verification) get
// labels that do not cover one another, at the production picture size
// and at the smallest.
func TestMarkerLabelsDoNotOverlap(t *testing.T) {
	rep := loadReport(t, "wedge.json")
	at := rep.FinishedAt.Add(20 * time.Second)
	markers := []Marker{
		{Time: at, Label: "approved by alice"},
		{Time: at.Add(800 * time.Millisecond), Label: "systemd_restart decode"},
		{Time: at.Add(2 * time.Second), Label: "remediation applied"},
		{Time: at.Add(2500 * time.Millisecond), Label: "verify: serving again"},
	}
	c, err := FromReport(rep, Options{Markers: markers})
	require.NoError(t, err)
	for _, size := range [][2]int{{Width, Height}, {MinWidth, MinHeight}} {
		_, l, err := c.draw(size[0], size[1])
		require.NoError(t, err)
		require.Len(t, l.markers, len(markers))
		for i, a := range l.markers {
			require.True(t, a.shown, "%dx%d: %q has a place", size[0], size[1], a.text)
			require.GreaterOrEqual(t, a.box.Min.X, l.left, "%q inside the lanes", a.text)
			require.LessOrEqual(t, a.box.Max.X, l.right, "%q inside the lanes", a.text)
			require.Less(t, a.box.Max.Y, l.markerTop+1, "%q below the header", a.text)
			require.Greater(t, a.box.Min.Y, l.lanesTop, "%q above the lanes", a.text)
			for _, b := range l.markers[i+1:] {
				overlap := a.box.Min.X < b.box.Max.X && b.box.Min.X < a.box.Max.X &&
					a.box.Min.Y < b.box.Max.Y && b.box.Min.Y < a.box.Max.Y
				require.False(t, overlap, "%dx%d: %q %v and %q %v overlap", size[0], size[1], a.text, a.box, b.text, b.box)
			}
		}
	}
}
