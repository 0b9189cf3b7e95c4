package cronspec_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/cronspec"
)

func TestParse(t *testing.T) {
	t.Parallel()
	from := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	for spec, want := range map[string]time.Time{
		"*/5 * * * *":            from.Add(5 * time.Minute),
		"30 */5 * * * *":         from.Add(30 * time.Second),
		"@every 10m":             from.Add(10 * time.Minute),
		"CRON_TZ=UTC 0 11 * * *": from.Add(time.Hour),
	} {
		s, err := cronspec.Parse(spec)
		require.NoError(t, err, spec)
		require.Equal(t, want, s.Next(from), spec)
	}
	for _, bad := range []string{"", "61 * * * *", "* * *", "@sometimes"} {
		_, err := cronspec.Parse(bad)
		require.Error(t, err, bad)
	}
}
