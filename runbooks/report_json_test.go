package runbooks_test

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/checks"
	"github.com/runbot/runbot/internal/step"
	"github.com/runbot/runbot/runbooks"
)

// TestReportJSONDurationsAreReadable: durations among a step's values are
// written as duration strings, everything else exactly as encoding/json
// writes it, and a stored step keeps its duration when read back.
func TestReportJSONDurationsAreReadable(t *testing.T) {
	started := time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)
	cases := []struct {
		name      string
		values    any
		durations map[string]string // json key -> expected string
	}{
		{
			name: "http_probe",
			values: checks.HTTPProbeOutput{
				OK: false, Outcome: "timeout", Connected: true, ConnectTime: 1200 * time.Microsecond,
				FirstByte: 0, Total: 35 * time.Second, Started: started, Body: `{"x":"<&>"}`,
			},
			durations: map[string]string{"connect_time": "1.2ms", "first_byte": "0s", "first_data": "0s", "total": "35s"},
		},
		{
			name: "metrics_sample, nested map",
			values: &checks.MetricsSampleOutput{
				Samples: 3, Span: 2500 * time.Millisecond,
				Metrics: map[string]checks.MetricSummary{"b": {Name: "b", Last: 1.5}, "a": {Name: "a", Max: math.MaxFloat64}},
			},
			durations: map[string]string{"span": "2.5s"},
		},
		{name: "command values are plain", values: map[string]any{"exit_code": 0, "values": map[string]string{"k": "v"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := runbooks.TargetRun{Step: "s", Check: "c", Target: "t", Status: step.OK, StartedAt: started,
				Duration: 1234 * time.Millisecond, DurationMS: 1234, Values: tc.values}
			raw, err := json.Marshal(tr)
			require.NoError(t, err)

			var got struct {
				Values map[string]any `json:"values"`
			}
			require.NoError(t, json.Unmarshal(raw, &got))
			plain, err := json.Marshal(tc.values)
			require.NoError(t, err)
			var want map[string]any
			require.NoError(t, json.Unmarshal(plain, &want))
			for k, s := range tc.durations {
				require.Equal(t, s, got.Values[k], "values.%s", k)
				want[k] = s
			}
			require.Equal(t, want, got.Values)

			var back runbooks.TargetRun
			require.NoError(t, json.Unmarshal(raw, &back))
			require.Equal(t, 1234*time.Millisecond, back.Duration, "a stored step keeps its duration")
		})
	}
}
