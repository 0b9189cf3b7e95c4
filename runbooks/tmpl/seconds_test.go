package tmpl_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/argspec"
)

// TestSecondsTemplateFunction: `seconds` renders a duration as the whole
// number of seconds a command such as sleep takes, where the duration
// itself would print as 1m30s.
func TestSecondsTemplateFunction(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{"minutes and seconds", 90 * time.Second, "sleep 90"},
		{"hours", 2 * time.Hour, "sleep 7200"},
		{"zero", time.Duration(0), "sleep 0"},
		{"rounded to the nearest second", 1500*time.Millisecond + time.Nanosecond, "sleep 2"},
		{"a string that is a duration", "1m30s", "sleep 90"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := render(t, argspec.EscapeShell, `sleep {{ .params.wait | seconds }}`, map[string]any{"wait": tc.v})
			require.NoError(t, err)
			require.Equal(t, tc.want, out)
		})
	}
	_, err := render(t, argspec.EscapeShell, `sleep {{ .params.wait | seconds }}`, map[string]any{"wait": "soon"})
	require.ErrorContains(t, err, "seconds: time: invalid duration")
	_, err = render(t, argspec.EscapeShell, `sleep {{ .params.wait | seconds }}`, map[string]any{"wait": 3})
	require.ErrorContains(t, err, "seconds: want a duration, got int")
}
