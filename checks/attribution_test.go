package checks

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/step"
)

// utc reads a "2006-01-02 15:04:05" time in UTC; a bad one is a broken test.
func utc(s string) time.Time {
	t, err := time.Parse("2006-01-02 15:04:05.999999999", s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestProbeWindows(t *testing.T) {
	t0 := utc("2026-06-18 21:05:00")
	events := []step.Event{
		{Kind: EventProbe, Time: t0, End: t0.Add(35 * time.Second), Labels: map[string]string{"request_id": "rb-a", "outcome": OutcomeTimeout}},
		{Kind: EventProbe, Time: t0, End: t0.Add(time.Second), Labels: map[string]string{"request_id": "rb-b", "outcome": OutcomeOK}},
		{Kind: EventProbe, Time: t0, End: t0.Add(time.Second), Labels: map[string]string{"request_id": "rb-c", "outcome": OutcomeBadStatus}},
		{Kind: EventProbe, Time: t0, Labels: map[string]string{"request_id": "rb-d"}},
		{Kind: EventSample, Time: t0},
	}
	require.Equal(t, []probeWindow{
		{ID: "rb-a", Start: t0, End: t0.Add(35 * time.Second), CutShort: true},
		{ID: "rb-b", Start: t0, End: t0.Add(time.Second)},
		{ID: "rb-c", Start: t0, End: t0.Add(time.Second)},
		{ID: "rb-d", Start: t0, End: t0, CutShort: true},
	}, probeWindows(events))
}

func TestAttribute(t *testing.T) {
	t0 := utc("2026-06-18 21:05:00")
	hung := probeWindow{ID: "rb-hung", Start: t0, End: t0.Add(35 * time.Second), CutShort: true}
	fine := probeWindow{ID: "rb-fine", Start: t0.Add(time.Minute), End: t0.Add(time.Minute + time.Second)}
	probes := []probeWindow{hung, fine}
	grace := 10 * time.Second
	abort := "Decode transfer failed for request rank=0 decode_req.req.rid='%s' decode_req.req.bootstrap_room=1 with exception KVTransferError(bootstrap_room=1): Aborted by AbortReq."
	line := func(rid string) []string { return []string{fmt.Sprintf(abort, rid)} }

	cases := []struct {
		name  string
		at    time.Time
		texts []string
		want  attribution
	}{
		{"at the hung probe's end", t0.Add(35 * time.Second), line("x"), attribution{Echo: true, RequestID: "rb-hung", By: "time"}},
		{"inside the grace period", t0.Add(44 * time.Second), line("x"), attribution{Echo: true, RequestID: "rb-hung", By: "time"}},
		{"after the grace period", t0.Add(46 * time.Second), line("x"), attribution{}},
		{"stamped in the second the probe gave up", t0.Add(34*time.Second + 500*time.Millisecond), line("x"), attribution{Echo: true, RequestID: "rb-hung", By: "time"}},
		// The incident recording's one "echo" was another client's abort 4 s
		// before either probe gave up: a line logged while the probe still
		// waited cannot be its echo.
		{"while the hung probe still waited", t0.Add(31 * time.Second), line("x"), attribution{}},
		{"during the hung probe", t0.Add(10 * time.Second), line("x"), attribution{}},
		{"before any probe", t0.Add(-time.Second), line("x"), attribution{}},
		{"names the hung probe, outside its window", t0.Add(-time.Hour), line("rb-hung"), attribution{Echo: true, RequestID: "rb-hung", By: "id"}},
		{"one of several rank lines names the probe", t0.Add(-time.Hour), append(line("x"), fmt.Sprintf(abort, "rb-hung")), attribution{Echo: true, RequestID: "rb-hung", By: "id"}},
		{"inside a probe that completed: not ours", t0.Add(time.Minute), line("x"), attribution{}},
		{"names a probe that completed: a real failure it met", t0.Add(time.Minute), line("rb-fine"), attribution{RequestID: "rb-fine", By: "id"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := attribute(c.at, c.texts, probes, grace)
			require.Equal(t, c.want, got)
		})
	}
	require.Equal(t, attribution{}, attribute(t0, line("x"), nil, grace), "no probes, nothing is an echo")
}

// TestOneEchoPerProbe: under load, other clients time out while our probe
// waits; only one abort — the one nearest our probe's end — is its echo.
func TestOneEchoPerProbe(t *testing.T) {
	t0 := utc("2026-06-18 21:05:00")
	probe := probeWindow{ID: "rb-hung", Start: t0, End: t0.Add(35 * time.Second), CutShort: true}
	var occs []*occurrence
	for _, s := range []int{5, 12, 20, 36, 40} {
		occs = append(occs, &occurrence{time: t0.Add(time.Duration(s) * time.Second), texts: []string{"Decode transfer failed for request rank=0 decode_req.req.rid='client-x' with exception KVTransferError(bootstrap_room=1): Aborted by AbortReq."}})
	}
	attributeAll(occs, []probeWindow{probe}, 10*time.Second)
	var echoes []time.Duration
	for _, oc := range occs {
		if oc.attr.Echo {
			echoes = append(echoes, oc.time.Sub(t0))
		}
	}
	require.Equal(t, []time.Duration{36 * time.Second}, echoes)
}

// TestEchoAfterSGLangsAbortLatency: SGLang logs a disconnected client's
// abort 2 to 8 s after it gave up, and meanwhile other clients' aborts may
// land; the probe claims the first line after its end, never one before.
func TestEchoAfterSGLangsAbortLatency(t *testing.T) {
	t0 := utc("2026-06-18 21:05:00")
	probe := probeWindow{ID: "rb-hung", Start: t0, End: t0.Add(35 * time.Second), CutShort: true}
	var occs []*occurrence
	for _, s := range []int{33, 42} {
		occs = append(occs, &occurrence{time: t0.Add(time.Duration(s) * time.Second), texts: []string{"Decode transfer failed for request rank=0 decode_req.req.rid='5f1e' decode_req.req.bootstrap_room=7 with exception NIXL KVReceiver Exception"}})
	}
	attributeAll(occs, []probeWindow{probe}, 10*time.Second)
	require.False(t, occs[0].attr.Echo, "logged 2 s before the probe gave up")
	require.Equal(t, attribution{Echo: true, RequestID: "rb-hung", By: "time"}, occs[1].attr, "logged 7 s after")
}
