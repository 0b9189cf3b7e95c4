package alerts

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/store"
)

// zabbixLike is a generic webhook's mapping for a monitoring system that
// sends one event per request, nothing like Alertmanager.
var zabbixLike = GenericMapping{
	Alertname:   "/event/name",
	Fingerprint: "event.id",
	Status:      "/event/value",
	// This system says OK when the problem is over.
	ResolvedValues: []string{"OK"},
	LabelsFrom:     "/event/tags",
	Labels:         map[string]string{"host": "/host/name", "severity": "event.severity"},
	Annotations:    map[string]string{"summary": "/event/message"},
	StartsAt:       "/event/started",
}

func TestGenericWebhookMapping(t *testing.T) {
	t.Parallel()
	g, err := compileGeneric(zabbixLike)
	require.NoError(t, err)
	body := `{"host":{"name":"web-1"},"event":{"id":"ev-17","name":"ServiceErrors","value":"PROBLEM",
		"severity":4,"message":"checkout 5xx","started":"2026-11-29T07:00:00Z","tags":{"service":"checkout","canary":true}}}`
	alerts, err := g.parse([]byte(body))
	require.NoError(t, err)
	require.Len(t, alerts, 1)
	a := alerts[0]
	require.Equal(t, "ev-17", a.Fingerprint)
	require.Equal(t, store.AlertFiring, a.Status)
	require.Equal(t, map[string]string{"alertname": "ServiceErrors", "host": "web-1", "severity": "4", "service": "checkout", "canary": "true"}, a.Labels)
	require.Equal(t, map[string]string{"summary": "checkout 5xx"}, a.Annotations)
	require.Equal(t, time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC), a.StartsAt)
	require.Equal(t, SourceGeneric, a.Source)
	require.JSONEq(t, body, string(a.Raw), "the alert as sent is kept")

	resolved, err := g.parse([]byte(`{"event":{"id":"ev-17","name":"ServiceErrors","value":"ok"}}`))
	require.NoError(t, err)
	require.Equal(t, store.AlertResolved, resolved[0].Status, "resolved values compare without case")

	// A list of alerts, with the fingerprint derived from the labels.
	list, err := compileGeneric(GenericMapping{Alerts: "items", Alertname: "title", LabelsFrom: "tags"})
	require.NoError(t, err)
	got, err := list.parse([]byte(`{"items":[{"title":"A","tags":{"x":"1"}},{"title":"A","tags":{"x":"1"}},{"title":"A","tags":{"x":"2"}}]}`))
	require.NoError(t, err)
	require.Len(t, got, 3)
	require.Equal(t, got[0].Fingerprint, got[1].Fingerprint, "the same labels are the same alert")
	require.NotEqual(t, got[0].Fingerprint, got[2].Fingerprint)
	require.Len(t, got[0].Fingerprint, 16)
}

func TestGenericWebhookRefusesBadBodies(t *testing.T) {
	t.Parallel()
	g, err := compileGeneric(zabbixLike)
	require.NoError(t, err)
	list, err := compileGeneric(GenericMapping{Alerts: "/items", Alertname: "/title"})
	require.NoError(t, err)
	for name, tc := range map[string]struct {
		p    *genericParser
		body string
		want string
	}{
		"malformed":         {g, `{"event":`, "malformed JSON"},
		"two documents":     {g, `{} {}`, "malformed JSON: data after the first value"},
		"no alertname":      {g, `{"event":{"id":"1","value":"PROBLEM"}}`, `alert: missing field "/event/name" (the alertname)`},
		"no fingerprint":    {g, `{"event":{"name":"X","value":"PROBLEM"}}`, `alert: missing field "event.id" (the fingerprint)`},
		"no status":         {g, `{"event":{"id":"1","name":"X"}}`, `alert: missing field "/event/value" (the status)`},
		"object as label":   {g, `{"event":{"id":"1","name":"X","value":"P","severity":{"n":4}}}`, "alert: event.severity: want a string, number or boolean"},
		"tags not object":   {g, `{"event":{"id":"1","name":"X","value":"P","tags":["a"]}}`, "alert: /event/tags: want an object of labels"},
		"bad start time":    {g, `{"event":{"id":"1","name":"X","value":"P","started":"soon"}}`, `alert: /event/started: want an RFC 3339 time, got "soon"`},
		"no alerts field":   {list, `{"title":"X"}`, `missing field "/items" (the alerts)`},
		"alerts not a list": {list, `{"items":{"title":"X"}}`, "/items: want an array of alerts"},
		"empty alerts":      {list, `{"items":[]}`, "/items: no alerts"},
		"alert not object":  {list, `{"items":["X"]}`, "/items[0]: want an object"},
	} {
		_, err := tc.p.parse([]byte(tc.body))
		var pe *PayloadError
		require.ErrorAs(t, err, &pe, name)
		require.Equal(t, http.StatusBadRequest, pe.Status, name)
		require.Contains(t, pe.Msg, tc.want, name)
	}
	_, err = compileGeneric(GenericMapping{Alertname: "a..b"})
	require.ErrorContains(t, err, `generic webhook alertname: path "a..b" has an empty step`)
	_, err = compileGeneric(GenericMapping{})
	require.ErrorContains(t, err, "alertname path is required")
}

// A generic webhook's alert goes the same way as Alertmanager's: routed by
// the runbook's own trigger, run once in its message's thread, resolved
// in the thread.
func TestGenericWebhookRunsRunbook(t *testing.T) {
	t.Parallel()
	h := newAlertHarness(t, func(s *alertSetup) { m := zabbixLike; s.cfg.Generic = &m })
	problem := []byte(`{"host":{"name":"web-1"},"event":{"id":"ev-17","name":"ServiceErrors","value":"PROBLEM","tags":{"service":"checkout"}}}`)
	for range 2 {
		code, out, _ := h.deliver("/alerts/generic", problem, bearer(alertToken))
		require.Equal(t, http.StatusOK, code, out)
	}
	h.settle()
	runs := h.runs()
	require.Len(t, runs, 1)
	require.Equal(t, map[string]string{"host": "here", "service": "checkout", "dir": "", "sleep": "0"}, runs[0].Params)
	require.Equal(t, "generic", runs[0].RequestedBy)
	require.Contains(t, h.newestAlert("ServiceErrors"), "Seen 2 times")
	require.Contains(t, h.newestAlert("ServiceErrors"), "From generic")

	code, out, _ := h.deliver("/alerts/generic", []byte(`{"event":{"id":"ev-17","name":"ServiceErrors","value":"OK","tags":{"service":"checkout"}}}`), bearer(alertToken))
	require.Equal(t, http.StatusOK, code, out)
	var ack alertAck
	require.NoError(t, json.Unmarshal([]byte(out), &ack))
	require.Equal(t, 1, ack.Resolved)
	h.settle()
	require.Contains(t, h.newestAlert("ServiceErrors"), "ServiceErrors resolved")
	var resolvedInThread bool
	for _, p := range h.posts() {
		if p.Thread != "" && p.Ref.Channel == alertsChan && strings.Contains(p.Message.Text(), "ServiceErrors resolved") {
			resolvedInThread = true
		}
	}
	require.True(t, resolvedInThread)

	// Without a mapping the endpoint does not exist.
	plain := newAlertHarness(t)
	code, _, _ = plain.deliver("/alerts/generic", problem, bearer(alertToken))
	require.Equal(t, http.StatusNotFound, code)
	require.Equal(t, 1.0, h.metric("runbot_alerts_received_total", "endpoint", "generic", "status", "resolved"))
}
