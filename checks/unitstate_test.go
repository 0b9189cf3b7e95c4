package checks

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/argspec"
	"github.com/runbot/runbot/internal/shell"
	"github.com/runbot/runbot/internal/target"
	"github.com/runbot/runbot/remote"
)

// unitEnv reads the unit's state through remote.Commands, whose show
// command prints what `systemctl show` would.
func unitEnv(show string, now time.Time) Env {
	r := &remote.Local{Name: "gpu-node-01"}
	return Env{
		Target: target.Target{Role: "decode", Host: "gpu-node-01", Runner: r, Unit: "sglang-dsv4-decode",
			Services: remote.Commands{Runner: r, ShowLine: show}},
		Args: argspec.Values{},
		Now:  func() time.Time { return now },
	}
}

func printfShow(props string) string { return shell.Join("printf", props) }

func TestUnitState(t *testing.T) {
	now := time.Date(2026, 6, 18, 21, 7, 30, 0, time.UTC)
	cases := []struct {
		name     string
		props    string
		want     UnitStateOutput
		evidence string
	}{
		{"active and running, the incident's blind spot",
			"Id=sglang-dsv4-decode.service\nLoadState=loaded\nActiveState=active\nSubState=running\nResult=success\nMainPID=48213\nNRestarts=0\nExecMainStatus=0\nActiveEnterTimestamp=Thu 2026-06-18 19:41:05 UTC\n",
			UnitStateOutput{Unit: "sglang-dsv4-decode", ActiveState: "active", SubState: "running", LoadState: "loaded", Result: "success",
				MainPID: 48213, ActiveSince: time.Date(2026, 6, 18, 19, 41, 5, 0, time.UTC), Uptime: time.Hour + 26*time.Minute + 25*time.Second, Active: true},
			"sglang-dsv4-decode: active (running) since 19:41:05 UTC (up 1h26m25s), pid 48213, 0 automatic restarts"},
		{"gave up restarting",
			"LoadState=loaded\nActiveState=failed\nSubState=failed\nResult=start-limit-hit\nMainPID=0\nNRestarts=5\nExecMainStatus=1\nActiveEnterTimestamp=Thu 2026-06-18 20:01:00 UTC\n",
			UnitStateOutput{Unit: "sglang-dsv4-decode", ActiveState: "failed", SubState: "failed", LoadState: "loaded", Result: "start-limit-hit",
				NRestarts: 5, ExecStatus: 1, ActiveSince: time.Date(2026, 6, 18, 20, 1, 0, 0, time.UTC), Failed: true, StartLimitHit: true},
			"sglang-dsv4-decode: failed (failed), 5 automatic restarts, last result start-limit-hit (exit status 1) — systemd gave up restarting it"},
		{"unknown unit",
			"LoadState=not-found\nActiveState=inactive\nSubState=dead\nResult=success\nMainPID=0\nNRestarts=0\nActiveEnterTimestamp=\n",
			UnitStateOutput{Unit: "sglang-dsv4-decode", ActiveState: "inactive", SubState: "dead", LoadState: "not-found", Result: "success"},
			"sglang-dsv4-decode: inactive (dead), not-found, 0 automatic restarts"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := UnitState{}.Run(t.Context(), unitEnv(printfShow(c.props), now))
			require.NoError(t, err)
			require.Equal(t, c.want, res.Values)
			require.Equal(t, []string{c.evidence}, res.Evidence)
		})
	}
}

func TestUnitStateCannotObserve(t *testing.T) {
	_, err := UnitState{}.Run(t.Context(), unitEnv("echo 'Failed to connect to bus' >&2; exit 1", time.Now()))
	require.ErrorContains(t, err, "Failed to connect to bus")

	env := unitEnv("true", time.Now())
	env.Target.Unit = ""
	_, err = UnitState{}.Run(t.Context(), env)
	require.ErrorContains(t, err, "no unit")
}

func TestUnitStatePlan(t *testing.T) {
	env := unitEnv("true", time.Now())
	env.Args = argspec.Values{"unit": "sglang-dsv4-prefill"}
	require.Equal(t, []string{fmt.Sprintf("read the state of %s on gpu-node-01 from its service manager", "sglang-dsv4-prefill")}, UnitState{}.Plan(env))
}
