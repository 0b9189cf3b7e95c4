package timeline

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 6, 18, 20, 30, 0, 0, time.UTC)

func at(d string) time.Time {
	dd, err := time.ParseDuration(d)
	if err != nil {
		panic(err)
	}
	return t0.Add(dd)
}

func TestSegments(t *testing.T) {
	minute := func(i int, n float64) Bucket {
		s := t0.Add(time.Duration(i) * time.Minute)
		return Bucket{Start: s, End: s.Add(time.Minute), Count: n}
	}
	cases := []struct {
		name string
		lane Lane
		want []segment
	}{
		{
			// The incident: lines every minute until 20:38:03, then none;
			// the check looked at 20:40:30.
			name: "stops mid-bucket",
			lane: Lane{
				Rate:     []Bucket{minute(7, 120), minute(8, 6), minute(9, 0), minute(10, 0)},
				Last:     at("8m3s"),
				Measured: at("10m30s"),
				Stalled:  true,
			},
			want: []segment{
				{Start: at("7m"), End: at("8m"), PerMinute: 120},
				// 6 lines in the 3 s before the last: at least 10 s, so 36/min.
				{Start: at("8m"), End: at("8m3s"), PerMinute: 36},
				{Start: at("8m3s"), End: at("9m")},
				{Start: at("9m"), End: at("10m")},
				{Start: at("10m"), End: at("10m30s")},
			},
		},
		{
			// A healthy engine seen 30 s into the current minute: 60 lines
			// in 30 s is 120 a minute, not a drop to 60.
			name: "open bucket is a rate over what was seen",
			lane: Lane{
				Rate:     []Bucket{minute(0, 120), minute(1, 60)},
				Last:     at("1m30s"),
				Measured: at("1m31s"),
			},
			want: []segment{
				{Start: at("0s"), End: at("1m"), PerMinute: 120},
				{Start: at("1m"), End: at("1m30s"), PerMinute: 120},
				{Start: at("1m30s"), End: at("1m31s")},
			},
		},
		{
			name: "no progress line at all",
			lane: Lane{Rate: []Bucket{minute(0, 0), minute(1, 0)}, Measured: at("1m10s"), Stalled: true},
			want: []segment{{Start: at("0s"), End: at("1m")}, {Start: at("1m"), End: at("1m10s")}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, c.lane.segments(t0.Add(-time.Hour), t0.Add(time.Hour)))
		})
	}
}

func TestSegmentsClipToTheWindow(t *testing.T) {
	l := Lane{Rate: []Bucket{{Start: at("0s"), End: at("1m"), Count: 30}, {Start: at("1m"), End: at("2m"), Count: 30}}, Last: at("2m"), Measured: at("2m")}
	got := l.segments(at("30s"), at("1m30s"))
	require.Equal(t, []segment{
		{Start: at("30s"), End: at("1m"), PerMinute: 30},
		{Start: at("1m"), End: at("1m30s"), PerMinute: 30},
	}, got)
}

func TestNiceCeil(t *testing.T) {
	for in, want := range map[float64]float64{0: 1, 0.4: 1, 1: 1, 1.2: 1.5, 3: 3, 7: 8, 13: 15, 21: 25, 240: 250, 260: 300, 552: 600, 900: 1000} {
		require.Equal(t, want, niceCeil(in), "niceCeil(%v)", in)
	}
}

func TestDurationWords(t *testing.T) {
	for d, want := range map[time.Duration]string{
		12 * time.Millisecond:              "12ms",
		6905 * time.Millisecond:            "6.9s",
		35 * time.Second:                   "35s",
		12*time.Minute + 40*time.Second:    "12m40s",
		2 * time.Minute:                    "2m",
		2*time.Hour + 5*time.Minute + 10e9: "2h05m",
	} {
		require.Equal(t, want, duration(d))
	}
}
