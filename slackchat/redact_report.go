package slackchat

import (
	"encoding/json"
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
	raw, err := json.Marshal(rep)
	if err != nil {
		return nil, fmt.Errorf("redact report %s: %w", rep.RunID, err)
	}
	var tree any
	if err := json.Unmarshal(raw, &tree); err != nil {
		return nil, fmt.Errorf("redact report %s: %w", rep.RunID, err)
	}
	if raw, err = json.Marshal(redactTree(tree, r)); err != nil {
		return nil, fmt.Errorf("redact report %s: %w", rep.RunID, err)
	}
	out := new(runbooks.Report)
	if err := json.Unmarshal(raw, out); err != nil {
		return nil, fmt.Errorf("redact report %s: %w", rep.RunID, err)
	}
	return out, nil
}

// redactTree redacts the strings of a decoded JSON value in place. Map
// keys are left alone: they are names from the runbook, not data.
func redactTree(v any, r *Redactor) any {
	switch x := v.(type) {
	case string:
		return r.Redact(x)
	case []any:
		for i := range x {
			x[i] = redactTree(x[i], r)
		}
	case map[string]any:
		for k := range x {
			x[k] = redactTree(x[k], r)
		}
	}
	return v
}
