package timeline

import "github.com/runbot/runbot/incident"

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
