package schedule

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/dispatch"
	"github.com/runbot/runbot/runbooks/catalog"
)

// TestLibrarySchedules: the library runbooks take host params, so they
// are scheduled from the config with the host to look at (they declare
// no schedule of their own: a built-in cannot know the hosts); such
// schedules are accepted, and a param out of its range is refused at
// start, not at 3am.
func TestLibrarySchedules(t *testing.T) {
	t.Parallel()
	cat, problems, err := catalog.Load()
	require.NoError(t, err)
	require.Empty(t, problems)
	d := testDispatcher(t, cat, dispatch.Config{})
	good := []Schedule{
		{Runbook: "gpu-node-health", Cron: "*/15 * * * *", Params: map[string]string{"host": "gpu-node-07", "expected_gpus": "8"}, Post: PostOnFailure},
		{Runbook: "systemd-crashloop", Cron: "*/5 * * * *", Params: map[string]string{"host": "gpu-node-07", "unit": "sglang-dsv4-decode.service"}, Post: PostOnChange},
		{Runbook: "http-alive-not-working", Cron: "*/5 * * * *", Params: map[string]string{
			"host": "gpu-node-07", "health_url": "http://127.0.0.1:30001/health", "url": "http://127.0.0.1:30001/v1/models",
		}},
	}
	s, err := New(Config{Schedules: good}, d, Deps{})
	require.NoError(t, err)
	var names []string
	for _, sc := range s.Schedules() {
		names = append(names, sc.Runbook)
	}
	require.Subset(t, names, []string{"gpu-node-health", "systemd-crashloop", "http-alive-not-working"})

	for name, sc := range map[string]Schedule{
		"too few journal lines": {Runbook: "systemd-crashloop", Cron: "@hourly", Params: map[string]string{"host": "h", "unit": "a.service", "journal_lines": "5"}},
		"not a unit name":       {Runbook: "systemd-crashloop", Cron: "@hourly", Params: map[string]string{"host": "h", "unit": "a; reboot"}},
		"no unit":               {Runbook: "systemd-crashloop", Cron: "@hourly", Params: map[string]string{"host": "h"}},
		"not nvidia-smi":        {Runbook: "gpu-node-health", Cron: "@hourly", Params: map[string]string{"host": "h", "nvidia_smi": "/bin/rm"}},
		"no request url":        {Runbook: "http-alive-not-working", Cron: "@hourly", Params: map[string]string{"host": "h", "health_url": "http://127.0.0.1/health"}},
	} {
		_, err := New(Config{Schedules: []Schedule{sc}}, d, Deps{})
		require.Error(t, err, name)
	}
}
