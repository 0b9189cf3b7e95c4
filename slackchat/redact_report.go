package slackchat

import (
	"fmt"

	"github.com/runbot/runbot/runbooks"
)

// redactReport returns a copy of rep with every string in it passed
// through r. It goes through the report's JSON form, the same form the
// store keeps, so no field is missed when the report grows one.
func redactReport(rep *runbooks.Report, r *Redactor) (*runbooks.Report, error) {
	if r == nil {
		return rep, nil
	}
	out := new(runbooks.Report)
	if err := r.Copy(rep, out); err != nil {
		return nil, fmt.Errorf("redact report %s: %w", rep.RunID, err)
	}
	return out, nil
}
