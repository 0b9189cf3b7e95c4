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
