package timeline

import (
	"fmt"

	"github.com/runbot/runbot/incident"
)

// IncidentMarkers marks, on a run's picture, when each action of its
// plans started and when each plan that ran actions ended: the report
// page and `runbot show --timeline` draw the same picture.
func IncidentMarkers(inc *incident.Incident) []Marker {
	var out []Marker
	for _, p := range inc.Plans {
		for _, a := range p.Actions {
			out = append(out, Marker{Time: a.StartedAt, Label: a.Action + " " + a.Target})
		}
		if !p.Ended.IsZero() && len(p.Actions) > 0 {
			out = append(out, Marker{Time: p.Ended, Label: "remediation " + string(p.Plan.State)})
		}
	}
	return out
}

// WriteIncidentPNG draws a stored run's timeline with its IncidentMarkers
// into the file at path (WritePNG), as `runbot show --timeline` asks; a
// run that recorded no report (it died first) has none.
func WriteIncidentPNG(path string, inc *incident.Incident) error {
	if inc.Report == nil {
		return fmt.Errorf("run %s has no report (status %s)", inc.Run.ID, inc.Run.Status)
	}
	return WritePNG(path, inc.Report, Options{Markers: IncidentMarkers(inc)})
}
