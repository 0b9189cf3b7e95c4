package replay

import (
	"encoding/json"
	"fmt"
	"github.com/runbot/runbot/runbooks"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/runbot/runbot/checks"
	"github.com/runbot/runbot/internal/step"
)

// recordedResult is a step's result as a stored report keeps it: the
// check's values, evidence and events, without the raw observations they
// were made from. A replay hands it to findings and diagnoses as it is;
// the check does not run again, so a changed check argument (a
// threshold, a pattern) changes nothing, while a changed `when:` does.
type recordedResult struct {
	// Values is the check's output in its JSON form (field names as
	// `runbot show --format json` prints them).
	Values   any             `yaml:"values,omitempty"`
	Evidence []string        `yaml:"evidence,omitempty"`
	Events   []recordedEvent `yaml:"events,omitempty"`
}

// recordedEvent is a step.Event in the recording.
type recordedEvent struct {
	Kind   string            `yaml:"kind"`
	Time   time.Time         `yaml:"time"`
	End    time.Time         `yaml:"end,omitempty"`
	Value  float64           `yaml:"value,omitempty"`
	Text   string            `yaml:"text,omitempty"`
	Labels map[string]string `yaml:"labels,omitempty"`
}

// result decodes the recorded values into the output type of check.
func (r *recordedResult) result(check string) (*step.Result, error) {
	res := &step.Result{Evidence: r.Evidence}
	for _, e := range r.Events {
		res.Events = append(res.Events, step.Event{Kind: e.Kind, Time: e.Time, End: e.End, Value: e.Value, Text: e.Text, Labels: e.Labels})
	}
	ct, ok := checks.Default.Lookup(check)
	if !ok {
		return nil, fmt.Errorf("unknown check %q", check)
	}
	if r.Values == nil || ct.Spec.Outputs == nil {
		return res, nil
	}
	raw, err := json.Marshal(fitDurations(jsonTree(r.Values), ct.Spec.Outputs))
	if err != nil {
		return nil, fmt.Errorf("recorded values: %w", err)
	}
	v := reflect.New(ct.Spec.Outputs).Elem()
	if err := json.Unmarshal(raw, v.Addr().Interface()); err != nil {
		return nil, fmt.Errorf("recorded values do not fit check %s's output: %w", check, err)
	}
	res.Values = v.Interface()
	return res, nil
}

// fitDurations turns the duration strings of a report's JSON form ("1.5s",
// as TargetRun.MarshalJSON writes them) back into the nanoseconds
// encoding/json reads into a time.Duration, wherever t has one.
func fitDurations(v any, t reflect.Type) any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch x := v.(type) {
	case string:
		if t == reflect.TypeFor[time.Duration]() {
			if d, err := time.ParseDuration(x); err == nil {
				return int64(d)
			}
		}
	case []any:
		if t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
			for i := range x {
				x[i] = fitDurations(x[i], t.Elem())
			}
		}
	case map[string]any:
		switch t.Kind() {
		case reflect.Map:
			for k, e := range x {
				x[k] = fitDurations(e, t.Elem())
			}
		case reflect.Struct:
			for i := range t.NumField() {
				f := t.Field(i)
				name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
				if name == "" {
					name = f.Name
				}
				if e, ok := x[name]; ok {
					x[name] = fitDurations(e, f.Type)
				}
			}
		}
	}
	return v
}

// jsonTree turns a decoded YAML tree into one encoding/json takes (YAML
// maps may have non-string keys).
func jsonTree(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = jsonTree(e)
		}
		return x
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[fmt.Sprint(k)] = jsonTree(e)
		}
		return m
	case []any:
		for i := range x {
			x[i] = jsonTree(x[i])
		}
	}
	return v
}

// ExportReport makes a recording of a stored report (`runbot show RUN
// --export DIR`): every step's result as the report keeps it. The store
// keeps no raw observations (command outputs, expositions), so such a
// recording replays the findings, diagnoses and remediation choice, not
// the checks; `runbot run --record` keeps everything.
func ExportReport(rep *runbooks.Report) (*Recording, error) {
	rec := NewRecording()
	rec.doc.Note = "Exported from the stored report of run " + rep.RunID + " (runbot show --export): each step's result as the report " +
		"kept it, without the raw observations, which the store does not keep. A replay re-evaluates findings and diagnoses; the checks do not run."
	rec.doc.Started, rec.doc.Finished, rec.doc.VerdictAt = rep.StartedAt, rep.FinishedAt, rep.VerdictAt
	for _, tr := range rep.Steps {
		if !slices.ContainsFunc(rec.doc.Targets, func(t recordedTarget) bool { return t.Role == tr.Target && t.Host == tr.Host }) {
			rec.doc.Targets = append(rec.doc.Targets, recordedTarget{Role: tr.Target, Host: tr.Host})
		}
		key := runKey(tr.Step, tr.Target)
		if rec.runs[key] != nil {
			key = fmt.Sprintf("%s/%s-%d", tr.Step, tr.Target, len(rec.order)+1)
		}
		od := &observedDoc{Step: tr.Step, Check: tr.Check, Target: tr.Target, Host: tr.Host, Status: tr.Status, Error: tr.Error,
			Started: tr.StartedAt, Duration: time.Duration(tr.DurationMS) * time.Millisecond}
		if tr.Duration > 0 {
			od.Duration = tr.Duration
		}
		// A skipped or cancelled step is not taped by the engine: the
		// replay decides it again from what the step needs.
		if tr.Status == step.Skipped {
			continue
		}
		if tr.Status == step.OK {
			var values any
			if tr.Values != nil {
				raw, err := json.Marshal(tr.Values)
				if err != nil {
					return nil, fmt.Errorf("export step %s on %s: %w", tr.Step, tr.Target, err)
				}
				if err := json.Unmarshal(raw, &values); err != nil {
					return nil, fmt.Errorf("export step %s on %s: %w", tr.Step, tr.Target, err)
				}
			}
			res := &recordedResult{Values: values, Evidence: tr.Evidence}
			for _, e := range tr.Events {
				res.Events = append(res.Events, recordedEvent{Kind: e.Kind, Time: e.Time, End: e.End, Value: e.Value, Text: e.Text, Labels: maps.Clone(e.Labels)})
			}
			od.Result = res
		}
		rec.runs[key] = od
		rec.order = append(rec.order, key)
	}
	return rec, nil
}

// redactResult applies redact to every text of a result.
func redactResult(r *recordedResult, redact func(string) string) *recordedResult {
	if r == nil {
		return nil
	}
	out := &recordedResult{Values: redactTree(r.Values, redact)}
	for _, e := range r.Evidence {
		out.Evidence = append(out.Evidence, redact(e))
	}
	for _, e := range r.Events {
		e.Text = redact(e.Text)
		if e.Labels != nil {
			labels := map[string]string{}
			for k, v := range e.Labels {
				labels[k] = redact(v)
			}
			e.Labels = labels
		}
		out.Events = append(out.Events, e)
	}
	return out
}

// redactTree returns a copy of a decoded JSON tree with its strings
// redacted; map keys are names from the runbook and checks, not data.
func redactTree(v any, redact func(string) string) any {
	switch x := v.(type) {
	case string:
		return redact(x)
	case []any:
		out := make([]any, len(x))
		for i := range x {
			out[i] = redactTree(x[i], redact)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = redactTree(e, redact)
		}
		return out
	}
	return v
}
