package runbooks

import (
	"encoding/json"
	"time"

	"github.com/runbot/runbot/internal/durjson"
)

// MarshalJSON writes a step's run as the report's JSON form has it, with
// every duration among the step's values as a Go duration string ("1.5s",
// "250ms"): a reader of a report, or a jq filter, should not have to know
// that a bare 5000000000 means five seconds.
func (t TargetRun) MarshalJSON() ([]byte, error) {
	type plain TargetRun // plain has no methods, so this does not recurse
	p := plain(t)
	if t.Values != nil {
		b, err := durjson.Marshal(t.Values)
		if err != nil {
			return nil, err
		}
		p.Values = json.RawMessage(b)
	}
	return json.Marshal(p)
}

// UnmarshalJSON reads a step's run back, restoring Duration from
// duration_ms: a stored report must show how long each step took, as the
// live one did.
func (t *TargetRun) UnmarshalJSON(b []byte) error {
	type plain TargetRun
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*t = TargetRun(p)
	t.Duration = time.Duration(p.DurationMS) * time.Millisecond
	return nil
}
