package alerts

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// missingLabelAlert is an Alertmanager notification of one firing
// HighErrorRate alert with the given extra labels.
func missingLabelAlert(fingerprint, labels string) []byte {
	return fmt.Appendf(nil, `{"receiver":"runbot","status":"firing","alerts":[{"status":"firing","labels":{"alertname":"HighErrorRate"%s},"annotations":{},"startsAt":"2026-11-29T07:46:43Z","endsAt":"0001-01-01T00:00:00Z","generatorURL":"http://prometheus/graph","fingerprint":"%s"}],"version":"4","groupKey":"{}:{alertname=\"HighErrorRate\"}","truncatedAlerts":0}`, labels, fingerprint)
}

// TestAlertWithoutARouteLabelIsNotRun: a route param reads a label the
// alert does not have. The alert is recorded as not runnable, with the
// label and the route named, instead of running with the param's default
// (here a sleep of 0 where the route meant the alert's own value); a
// route that writes a default runs with it.
func TestAlertWithoutARouteLabelIsNotRun(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, sleep, labels, problem string
		runs                         int
	}{
		{name: "label missing, no default", sleep: "{{ .labels.wait_s }}", labels: `,"service":"api"`,
			problem: `HighErrorRate (00000000000000a1): params of service-errors from the alert: param sleep: the alert has no label "wait_s", which alert route 1 (service-errors) reads for it; to run without it, give the route a default ({{ .labels.wait_s | default "..." }})`},
		{name: "label present", sleep: "{{ .labels.wait_s }}", labels: `,"service":"api","wait_s":"0"`, runs: 1},
		{name: "label missing, the route's default", sleep: `{{ .labels.wait_s | default "0" }}`, labels: `,"service":"api"`, runs: 1},
		{name: "label missing, the runbook's default", sleep: `{{ .labels.wait_s | default "" }}`, labels: `,"service":"api"`, runs: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newAlertHarness(t, func(s *alertSetup) {
				s.cfg.Routes = []Route{{
					Match:   map[string]string{"alertname": "HighErrorRate"},
					Runbook: "service-errors",
					Params:  map[string]string{"host": "here", "service": "{{ .labels.service }}", "sleep": tc.sleep, "dir": s.cfg.Routes[0].Params["dir"]},
				}}
			})
			ack := h.accepted(missingLabelAlert("00000000000000a1", tc.labels))
			h.settle()
			require.Len(t, h.runs(), tc.runs)
			if tc.problem == "" {
				require.Zero(t, ack.Invalid, ack.Problems)
				return
			}
			require.Equal(t, 1, ack.Invalid)
			require.Equal(t, []string{tc.problem}, ack.Problems)
			msgs := h.alertMessages("HighErrorRate")
			require.Len(t, msgs, 1)
			require.Contains(t, msgs[0].Text(), `Not run: params of service-errors from the alert: param sleep: the alert has no label "wait_s"`)
		})
	}
}
