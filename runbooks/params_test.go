package runbooks_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/step"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/engine"
)

const rangedParams = `
name: ranged
params:
  host: {type: host, required: true}
  samples: {type: int, default: "5", min: 2, max: 60}
  floor: {type: int, default: "0", min: -3}
  interval: {type: duration, default: 2s, min: 100ms, max: 1m}
  pause: {type: duration, default: 1s}
  settle: {type: duration, default: 0s, min: 0s}
steps:
  - id: uptime
    check: command
    target: host
    with: {cmd: uptime}
`

// TestParamRanges: a value outside a param's declared range is bad input,
// with a message that states the range; the bounds themselves are allowed.
func TestParamRanges(t *testing.T) {
	rb, problems := runbooks.Parse("ranged.yaml", []byte(rangedParams))
	require.Empty(t, problems)
	cases := []struct {
		name  string
		given map[string]string
		want  string // the error; empty when the params are accepted
	}{
		{"defaults", map[string]string{}, ""},
		{"int bounds", map[string]string{"samples": "2", "floor": "-3"}, ""},
		{"int max", map[string]string{"samples": "60"}, ""},
		{"int below", map[string]string{"samples": "-5"}, "runbook ranged: param samples: want an int from 2 to 60, got -5"},
		{"int above", map[string]string{"samples": "61"}, "runbook ranged: param samples: want an int from 2 to 60, got 61"},
		{"int below min only", map[string]string{"floor": "-4"}, "runbook ranged: param floor: want an int of at least -3, got -4"},
		{"duration bounds", map[string]string{"interval": "100ms"}, ""},
		{"duration max", map[string]string{"interval": "60s"}, ""},
		{"duration below", map[string]string{"interval": "1ns"}, "runbook ranged: param interval: want a duration from 100ms to 1m, got 1ns"},
		{"duration above", map[string]string{"interval": "1h"}, "runbook ranged: param interval: want a duration from 100ms to 1m, got 1h"},
		{"duration zero without min", map[string]string{"pause": "0s"}, "runbook ranged: param pause: want a positive duration, got 0s"},
		{"duration negative without min", map[string]string{"pause": "-5s"}, "runbook ranged: param pause: want a positive duration, got -5s"},
		{"duration zero with min 0s", map[string]string{"settle": "0"}, ""},
		{"duration negative with min 0s", map[string]string{"settle": "-1s"}, "runbook ranged: param settle: want a duration of at least 0s, got -1s"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			given := map[string]string{"host": "here"}
			for k, v := range c.given {
				given[k] = v
			}
			typed, _, err := rb.ResolveParams(given)
			if c.want == "" {
				require.NoError(t, err)
				return
			}
			var pe *runbooks.ParamError
			require.ErrorAs(t, err, &pe)
			require.EqualError(t, err, c.want)
			require.Nil(t, typed)
		})
	}
	typed, _, err := rb.ResolveParams(map[string]string{"host": "here"})
	require.NoError(t, err)
	require.Equal(t, 5, typed["samples"])
	require.Equal(t, 2*time.Second, typed["interval"])
	require.Equal(t, time.Duration(0), typed["settle"])
}

// TestTemplatedArgOutOfRangeFailsTheStep: a check's own bounds hold for a
// value that only a template produces, at run time, where lint cannot see.
func TestTemplatedArgOutOfRangeFailsTheStep(t *testing.T) {
	rb, problems := runbooks.Parse("sampled.yaml", []byte(`
name: sampled
params:
  host: {type: host, required: true}
  samples: {type: int, default: "3"}
steps:
  - id: counters
    check: metrics_sample
    target: host
    with: {samples: '{{ .params.samples }}', metrics: [up], url: "http://127.0.0.1:1/metrics", via: bot}
`))
	require.Empty(t, problems)
	e := localEngine(t)
	p, err := e.Prepare(t.Context(), rb, map[string]string{"host": "here", "samples": "0"})
	require.NoError(t, err, "the param has no range of its own")
	rep := e.Run(t.Context(), p, engine.RunOptions{})
	require.Len(t, rep.Steps, 1)
	require.Equal(t, step.Error, rep.Steps[0].Status)
	require.Equal(t, "argument samples: want an int of at least 1, got 0", rep.Steps[0].Error)
}

// TestParamSpacesAreTrimmed: spaces around a typed value ("samples= 5")
// are a typing slip: the run records and uses the value without them.
func TestParamSpacesAreTrimmed(t *testing.T) {
	rb, problems := runbooks.Parse("ranged.yaml", []byte(rangedParams))
	require.Empty(t, problems)
	typed, text, err := rb.ResolveParams(map[string]string{"host": " gpu-1 ", "samples": " 5", "interval": "3s "})
	require.NoError(t, err)
	require.Equal(t, "5", text["samples"])
	require.Equal(t, "3s", text["interval"])
	require.Equal(t, "gpu-1", text["host"])
	require.Equal(t, 3*time.Second, typed["interval"])
}
