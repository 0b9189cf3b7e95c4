package timeline

import (
	"slices"

	"github.com/runbot/runbot/runbooks/remediation"
)

// ApplyMarkers turns what a remediation did into markers: one per action
// when it started ("systemd_restart decode"), and one for the verification
// run with its verdict. Pass them in Options.Markers to show the fix on
// the run's timeline.
func ApplyMarkers(res *remediation.ApplyResult) []Marker {
	if res == nil {
		return nil
	}
	var ms []Marker
	for _, a := range res.Actions {
		if a.StartedAt.IsZero() {
			continue
		}
		label := a.Action
		if a.Target != "" {
			label += " " + a.Target
		}
		ms = append(ms, Marker{Time: a.StartedAt, Label: label})
	}
	if v := res.Verify; v != nil && !v.StartedAt.IsZero() {
		label := "verify: still failing"
		if res.Recovered {
			label = "verify: serving again"
		}
		ms = append(ms, Marker{Time: v.StartedAt, Label: label})
	}
	slices.SortStableFunc(ms, func(a, b Marker) int { return a.Time.Compare(b.Time) })
	return ms
}
