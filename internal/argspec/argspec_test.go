package argspec_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/argspec"
)

func TestConvert(t *testing.T) {
	cases := []struct {
		typ  argspec.Type
		raw  any
		want any
		err  string
	}{
		{argspec.Duration, "35s", 35 * time.Second, ""},
		{argspec.Duration, 35, nil, "want a duration with a unit like 35s"},
		{argspec.Int, "5", 5, ""},
		{argspec.Int, "five", nil, `want an integer, got "five"`},
		{argspec.Bool, "true", true, ""},
		{argspec.StringList, []any{"a", 1}, []string{"a", "1"}, ""},
		{argspec.StringList, "solo", []string{"solo"}, ""},
		{argspec.Regex, "(open", nil, "invalid regular expression"},
		{argspec.RegexMap, map[string]any{"x": "a+"}, map[string]string{"x": "a+"}, ""},
		{argspec.StringMap, []any{"a"}, nil, "want a mapping of names to strings, got a list"},
		{argspec.String, map[string]any{}, nil, "want a string, got a mapping"},
	}
	for _, c := range cases {
		got, err := argspec.Convert(c.typ, c.raw)
		if c.err != "" {
			require.ErrorContains(t, err, c.err, "%s %v", c.typ, c.raw)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, c.want, got)
	}
}

func TestWithDefaultsKeepsGivenValues(t *testing.T) {
	spec := argspec.Spec{Args: []argspec.Arg{{Name: "samples", Type: argspec.Int, Default: 5}, {Name: "url", Type: argspec.String}}}
	got := spec.WithDefaults(argspec.Values{"url": "http://x"})
	require.Equal(t, argspec.Values{"samples": 5, "url": "http://x"}, got)
	require.Equal(t, argspec.Values{"samples": 3}, spec.WithDefaults(argspec.Values{"samples": 3}))
}

func TestEnumValidation(t *testing.T) {
	a := argspec.Arg{Name: "via", Enum: []string{"target", "bot"}}
	require.NoError(t, a.Validate("bot"))
	require.EqualError(t, a.Validate("ssh"), `want one of target, bot, got "ssh"`)
}

func TestBoundsValidation(t *testing.T) {
	samples := argspec.Arg{Name: "samples", Type: argspec.Int, Min: 1}
	window := argspec.Arg{Name: "window", Type: argspec.Duration, Min: time.Second, Max: time.Hour}
	interval := argspec.Arg{Name: "interval", Type: argspec.Duration, Positive: true}
	capped := argspec.Arg{Name: "pause", Type: argspec.Duration, Positive: true, Max: 10 * time.Minute}
	ratio := argspec.Arg{Name: "ratio", Type: argspec.Float, Max: 1.0}
	cases := []struct {
		arg   argspec.Arg
		value any
		err   string
		rng   string
	}{
		{samples, 1, "", "at least 1"},
		{samples, 0, "want an int of at least 1, got 0", "at least 1"},
		{window, time.Second, "", "from 1s to 1h"},
		{window, time.Hour, "", "from 1s to 1h"},
		{window, time.Millisecond, "want a duration from 1s to 1h, got 1ms", "from 1s to 1h"},
		{window, 61 * time.Minute, "want a duration from 1s to 1h, got 1h1m", "from 1s to 1h"},
		{interval, time.Nanosecond, "", "positive"},
		{interval, time.Duration(0), "want a positive duration, got 0s", "positive"},
		{interval, -time.Second, "want a positive duration, got -1s", "positive"},
		{capped, 11 * time.Minute, "want a positive duration of at most 10m, got 11m", "positive, at most 10m"},
		{ratio, 1.5, "want a number of at most 1, got 1.5", "at most 1"},
		// A bound of the wrong Go type is a mistake in the spec, reported
		// rather than compared as something else.
		{samples, time.Second, "cannot compare time.Duration 1s with the bound int 1", "at least 1"},
	}
	for _, c := range cases {
		t.Run(c.arg.Name+"="+argspec.FormatValue(c.value), func(t *testing.T) {
			err := c.arg.Validate(c.value)
			if c.err == "" {
				require.NoError(t, err)
			} else {
				require.EqualError(t, err, c.err)
			}
			require.Equal(t, c.rng, c.arg.Range())
		})
	}
	require.Empty(t, argspec.Arg{Type: argspec.Int}.Range())
	require.NoError(t, argspec.Arg{Type: argspec.Int}.Validate(-5), "no bounds, no limit")
}
