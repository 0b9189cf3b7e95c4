package alerts

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/runbot/runbot/store"
)

// GenericMapping says where a webhook that is not Alertmanager keeps the
// parts of an alert, so that any monitoring system that can POST JSON can
// trigger runbooks. Paths are JSON pointers ("/labels/host", RFC 6901) or
// dotted field paths ("labels.host"); an array element is its index
// ("/alerts/0", "alerts.0").
type GenericMapping struct {
	// Alerts is the path of the array of alerts in the body; empty means
	// the body is one alert. Every other path is within one alert.
	Alerts string
	// Alertname is the path of the alert's name (required).
	Alertname string
	// Fingerprint is the path of the alert's identity. Empty derives it
	// from the labels, so the same labels are the same alert.
	Fingerprint string
	// Status is the path of the alert's state; empty means every alert
	// is firing. A value in ResolvedValues (case-insensitive; "resolved",
	// "ok", "closed", "inactive", "normal" when empty) is resolved, any
	// other value firing.
	Status         string
	ResolvedValues []string
	// Labels maps label names to paths; LabelsFrom is the path of an
	// object whose members all become labels. Annotations likewise.
	Labels          map[string]string
	LabelsFrom      string
	Annotations     map[string]string
	AnnotationsFrom string
	// StartsAt is the path of an RFC 3339 start time (optional).
	StartsAt string
}

var defaultResolved = []string{"resolved", "ok", "closed", "inactive", "normal"}

// jsonPath is a parsed path: the member names or indexes to walk.
type jsonPath struct {
	src   string
	parts []string
}

func parsePath(src string) (jsonPath, error) {
	p := jsonPath{src: src}
	switch {
	case src == "" || src == "/":
		return jsonPath{src: src}, nil
	case strings.HasPrefix(src, "/"):
		for _, part := range strings.Split(src[1:], "/") {
			p.parts = append(p.parts, strings.NewReplacer("~1", "/", "~0", "~").Replace(part))
		}
	default:
		for _, part := range strings.Split(src, ".") {
			if part == "" {
				return p, fmt.Errorf("path %q has an empty step", src)
			}
			p.parts = append(p.parts, part)
		}
	}
	return p, nil
}

// lookup walks the path through a decoded document.
func (p jsonPath) lookup(doc any) (any, bool) {
	cur := doc
	for _, part := range p.parts {
		switch x := cur.(type) {
		case map[string]any:
			v, ok := x[part]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			cur = x[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// genericParser is a compiled GenericMapping.
type genericParser struct {
	alerts, name, fingerprint, status, startsAt jsonPath
	labelsFrom, annotationsFrom                 jsonPath
	labels, annotations                         map[string]jsonPath
	resolved                                    []string
}

func compileGeneric(m GenericMapping) (*genericParser, error) {
	if m.Alertname == "" {
		return nil, errors.New("generic webhook: alertname path is required")
	}
	g := &genericParser{labels: map[string]jsonPath{}, annotations: map[string]jsonPath{}}
	var errs []error
	one := func(dst *jsonPath, what, src string) {
		p, err := parsePath(src)
		if err != nil {
			errs = append(errs, fmt.Errorf("generic webhook %s: %w", what, err))
		}
		*dst = p
	}
	one(&g.alerts, "alerts", m.Alerts)
	one(&g.name, "alertname", m.Alertname)
	one(&g.fingerprint, "fingerprint", m.Fingerprint)
	one(&g.status, "status", m.Status)
	one(&g.startsAt, "starts_at", m.StartsAt)
	one(&g.labelsFrom, "labels_from", m.LabelsFrom)
	one(&g.annotationsFrom, "annotations_from", m.AnnotationsFrom)
	for k, src := range m.Labels {
		var p jsonPath
		one(&p, "label "+k, src)
		g.labels[k] = p
	}
	for k, src := range m.Annotations {
		var p jsonPath
		one(&p, "annotation "+k, src)
		g.annotations[k] = p
	}
	g.resolved = m.ResolvedValues
	if len(g.resolved) == 0 {
		g.resolved = defaultResolved
	}
	return g, errors.Join(errs...)
}

// parse reads a generic webhook body into alerts.
func (g *genericParser) parse(body []byte) ([]Alert, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, jsonProblem("", err)
	}
	if dec.More() {
		return nil, badPayload("malformed JSON: data after the first value")
	}
	items := []any{doc}
	if g.alerts.src != "" {
		v, ok := g.alerts.lookup(doc)
		if !ok {
			return nil, badPayload("missing field %q (the alerts)", g.alerts.src)
		}
		list, isList := v.([]any)
		if !isList {
			return nil, badPayload("%s: want an array of alerts", g.alerts.src)
		}
		if len(list) == 0 {
			return nil, badPayload("%s: no alerts", g.alerts.src)
		}
		items = list
	}
	out := make([]Alert, 0, len(items))
	for i, item := range items {
		at := "alert"
		if g.alerts.src != "" {
			at = fmt.Sprintf("%s[%d]", g.alerts.src, i)
		}
		a, err := g.alert(item)
		if err != nil {
			return nil, badPayload("%s: %v", at, err)
		}
		out = append(out, a)
	}
	return out, nil
}

func (g *genericParser) alert(item any) (Alert, error) {
	if _, ok := item.(map[string]any); !ok {
		return Alert{}, errors.New("want an object")
	}
	a := Alert{Source: SourceGeneric, Status: store.AlertFiring, Labels: map[string]string{}, Annotations: map[string]string{}}
	if err := g.collect(item, a.Labels, g.labelsFrom, g.labels, "label"); err != nil {
		return Alert{}, err
	}
	if err := g.collect(item, a.Annotations, g.annotationsFrom, g.annotations, "annotation"); err != nil {
		return Alert{}, err
	}
	name, ok, err := scalar(item, g.name)
	if err != nil {
		return Alert{}, err
	}
	if !ok || strings.TrimSpace(name) == "" {
		return Alert{}, fmt.Errorf("missing field %q (the alertname)", g.name.src)
	}
	a.Labels["alertname"] = name
	if g.status.src != "" {
		s, ok, err := scalar(item, g.status)
		if err != nil {
			return Alert{}, err
		}
		if !ok {
			return Alert{}, fmt.Errorf("missing field %q (the status)", g.status.src)
		}
		for _, r := range g.resolved {
			if strings.EqualFold(s, r) {
				a.Status = store.AlertResolved
			}
		}
	}
	if g.startsAt.src != "" {
		s, _, err := scalar(item, g.startsAt)
		if err != nil {
			return Alert{}, err
		}
		if a.StartsAt, err = alertTime(s); err != nil {
			return Alert{}, fmt.Errorf("%s: %w", g.startsAt.src, err)
		}
	}
	if g.fingerprint.src != "" {
		fp, ok, err := scalar(item, g.fingerprint)
		if err != nil {
			return Alert{}, err
		}
		if !ok || fp == "" {
			return Alert{}, fmt.Errorf("missing field %q (the fingerprint)", g.fingerprint.src)
		}
		a.Fingerprint = fp
	} else {
		a.Fingerprint = labelFingerprint(a.Labels)
	}
	raw, err := json.Marshal(item)
	if err != nil {
		return Alert{}, fmt.Errorf("keep the alert: %w", err)
	}
	a.Raw = raw
	return a, checkAlert(a)
}

func (g *genericParser) collect(item any, dst map[string]string, from jsonPath, paths map[string]jsonPath, what string) error {
	if from.src != "" {
		if v, ok := from.lookup(item); ok {
			obj, isObj := v.(map[string]any)
			if !isObj {
				return fmt.Errorf("%s: want an object of %ss", from.src, what)
			}
			for k, v := range obj {
				s, err := scalarText(v)
				if err != nil {
					return fmt.Errorf("%s.%s: %w", from.src, k, err)
				}
				dst[k] = s
			}
		}
	}
	for k, p := range paths {
		s, ok, err := scalar(item, p)
		if err != nil {
			return err
		}
		if ok {
			dst[k] = s
		}
	}
	return nil
}

// scalar reads a string, number or boolean at p as text; ok is false when
// nothing is there.
func scalar(item any, p jsonPath) (string, bool, error) {
	v, ok := p.lookup(item)
	if !ok || v == nil {
		return "", false, nil
	}
	s, err := scalarText(v)
	if err != nil {
		return "", false, fmt.Errorf("%s: %w", p.src, err)
	}
	return s, true, nil
}

func scalarText(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case json.Number:
		return x.String(), nil
	case bool:
		return strconv.FormatBool(x), nil
	case nil:
		return "", nil
	}
	return "", errors.New("want a string, number or boolean")
}

// labelFingerprint identifies an alert by its labels, as Alertmanager
// does: the same label set is the same alert.
func labelFingerprint(labels map[string]string) string {
	h := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		h.Write([]byte(k))
		h.Write([]byte{0xff})
		h.Write([]byte(labels[k]))
		h.Write([]byte{0xff})
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}
