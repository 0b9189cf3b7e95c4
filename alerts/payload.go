package alerts

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/runbot/runbot/store"
)

// Alert is one alert as runbot keeps it, whichever webhook delivered it:
// what the store records for each delivery, what routes match and what
// the alert's message shows.
type Alert struct {
	Fingerprint  string            `json:"fingerprint"`
	Status       store.AlertStatus `json:"status"`
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations,omitempty"`
	StartsAt     time.Time         `json:"startsAt,omitzero"`
	EndsAt       time.Time         `json:"endsAt,omitzero"`
	GeneratorURL string            `json:"generatorURL,omitempty"`
	// Source is the endpoint that delivered it: "alertmanager" or
	// "generic".
	Source string `json:"source"`
	// Receiver, GroupKey and ExternalURL come from the Alertmanager
	// notification that carried the alert.
	Receiver    string `json:"receiver,omitempty"`
	GroupKey    string `json:"groupKey,omitempty"`
	ExternalURL string `json:"externalURL,omitempty"`
	// Raw is the alert object as a generic webhook sent it.
	Raw json.RawMessage `json:"raw,omitempty"`
}

// Name is the alert's alertname label.
func (a Alert) Name() string { return a.Labels["alertname"] }

// PayloadError is a webhook body runbot cannot take; the webhook answers
// 4xx with its message, and nothing is recorded.
type PayloadError struct {
	// Status is the HTTP status to answer with (400 or 413).
	Status int
	Msg    string
}

func (e *PayloadError) Error() string { return e.Msg }

func badPayload(format string, args ...any) *PayloadError {
	return &PayloadError{Status: 400, Msg: fmt.Sprintf(format, args...)}
}

// amWebhook is Alertmanager's webhook body, version 4. Fields runbot does
// not use (groupLabels, commonLabels, notification_reason, …) are ignored,
// so newer Alertmanagers that add fields keep working.
type amWebhook struct {
	Version         *string           `json:"version"`
	Status          string            `json:"status"`
	Receiver        string            `json:"receiver"`
	GroupKey        string            `json:"groupKey"`
	ExternalURL     string            `json:"externalURL"`
	TruncatedAlerts int               `json:"truncatedAlerts"`
	Alerts          []json.RawMessage `json:"alerts"`
}

type amAlert struct {
	Status       *string                    `json:"status"`
	Labels       map[string]json.RawMessage `json:"labels"`
	Annotations  map[string]json.RawMessage `json:"annotations"`
	StartsAt     string                     `json:"startsAt"`
	EndsAt       string                     `json:"endsAt"`
	GeneratorURL string                     `json:"generatorURL"`
	Fingerprint  *string                    `json:"fingerprint"`
}

// parseAlertmanager reads an Alertmanager webhook body (version 4) into
// its alerts. Every problem is a *PayloadError naming the field.
func parseAlertmanager(body []byte) ([]Alert, error) {
	var msg amWebhook
	if err := json.Unmarshal(body, &msg); err != nil {
		return nil, jsonProblem("", err)
	}
	switch {
	case msg.Version == nil:
		return nil, badPayload(`missing field "version" (runbot takes Alertmanager webhook version "4")`)
	case *msg.Version != "4":
		return nil, badPayload("unsupported webhook version %q (runbot takes Alertmanager webhook version \"4\")", *msg.Version)
	case msg.Alerts == nil:
		return nil, badPayload(`missing field "alerts"`)
	case len(msg.Alerts) == 0:
		return nil, badPayload(`field "alerts" is empty`)
	}
	out := make([]Alert, 0, len(msg.Alerts))
	for i, raw := range msg.Alerts {
		at := fmt.Sprintf("alerts[%d]", i)
		var am amAlert
		if err := json.Unmarshal(raw, &am); err != nil {
			return nil, jsonProblem(at, err)
		}
		a := Alert{GeneratorURL: am.GeneratorURL, Source: SourceAlertmanager,
			Receiver: msg.Receiver, GroupKey: msg.GroupKey, ExternalURL: msg.ExternalURL}
		var err error
		if a.Labels, err = stringMap(at+".labels", am.Labels); err != nil {
			return nil, err
		}
		if a.Annotations, err = stringMap(at+".annotations", am.Annotations); err != nil {
			return nil, err
		}
		if am.Status == nil {
			return nil, badPayload("%s: missing field \"status\"", at)
		}
		if am.Fingerprint == nil || *am.Fingerprint == "" {
			return nil, badPayload("%s: missing field \"fingerprint\"", at)
		}
		a.Fingerprint = *am.Fingerprint
		if a.Status, err = alertStatus(*am.Status); err != nil {
			return nil, badPayload("%s.status: %v", at, err)
		}
		if a.StartsAt, err = alertTime(am.StartsAt); err != nil {
			return nil, badPayload("%s.startsAt: %v", at, err)
		}
		if a.EndsAt, err = alertTime(am.EndsAt); err != nil {
			return nil, badPayload("%s.endsAt: %v", at, err)
		}
		if err := checkAlert(a); err != nil {
			return nil, badPayload("%s.%v", at, err)
		}
		out = append(out, a)
	}
	return out, nil
}

// stringMap reads a JSON object of strings (labels, annotations), naming
// the member that is not a string.
func stringMap(at string, raw map[string]json.RawMessage) (map[string]string, error) {
	if raw == nil {
		return nil, nil
	}
	out := make(map[string]string, len(raw))
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		var s string
		if err := json.Unmarshal(raw[k], &s); err != nil {
			return nil, badPayload("%s.%s: want a string, got %s", at, k, jsonValueKind(raw[k]))
		}
		out[k] = s
	}
	return out, nil
}

func jsonValueKind(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "bool"
	case 'n':
		return "null"
	}
	return "number"
}

func alertStatus(s string) (store.AlertStatus, error) {
	switch st := store.AlertStatus(s); st {
	case store.AlertFiring, store.AlertResolved:
		return st, nil
	}
	return "", fmt.Errorf("want %q or %q, got %q", store.AlertFiring, store.AlertResolved, clip(s, 40))
}

// alertTime reads an RFC 3339 time; Alertmanager's zero time
// (0001-01-01T00:00:00Z, a firing alert's endsAt) and an absent one are
// the zero time.
func alertTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("want an RFC 3339 time, got %q", clip(s, 40))
	}
	if t.Year() <= 1 {
		return time.Time{}, nil
	}
	return t, nil
}

// maxFingerprint bounds a fingerprint: it is a key in the store and in
// logs. Alertmanager's are 16 hex digits.
const maxFingerprint = 200

// checkAlert checks what every alert needs, whichever webhook sent it:
// labels with an alertname and a fingerprint of sensible length. Label
// values are not judged; they are data, and whatever they hold is quoted
// or escaped wherever it goes.
func checkAlert(a Alert) error {
	switch {
	case len(a.Labels) == 0:
		return errors.New(`labels: missing (an alert needs at least "alertname")`)
	case strings.TrimSpace(a.Labels["alertname"]) == "":
		return errors.New(`labels.alertname: missing`)
	case len(a.Fingerprint) > maxFingerprint:
		return fmt.Errorf("fingerprint: longer than %d bytes", maxFingerprint)
	}
	for _, k := range slices.Sorted(maps.Keys(a.Labels)) {
		if k == "" {
			return errors.New("labels: a label has an empty name")
		}
	}
	return nil
}

// jsonProblem turns a decoding error into a message that says where the
// body went wrong.
func jsonProblem(at string, err error) *PayloadError {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	prefix := ""
	if at != "" {
		prefix = at + ": "
	}
	switch {
	case errors.As(err, &syn):
		return badPayload("%smalformed JSON at byte %d: %v", prefix, syn.Offset, syn)
	case errors.As(err, &typ):
		field := typ.Field
		if at != "" && field != "" {
			field = at + "." + field
		} else if at != "" {
			field = at
		}
		if field == "" {
			return badPayload("body must be a JSON object, got %s", typ.Value)
		}
		return badPayload("%s: want %s, got %s", field, jsonKind(typ.Type.Kind().String()), typ.Value)
	}
	return badPayload("%smalformed JSON: %v", prefix, err)
}

func jsonKind(goKind string) string {
	switch goKind {
	case "map", "struct":
		return "an object"
	case "slice":
		return "an array"
	case "string", "ptr":
		return "a string"
	}
	return goKind
}

// clip shortens s for an error message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
