package timeline

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/simtest"
	"github.com/runbot/runbot/inventory"
	"github.com/runbot/runbot/remote/sshrun"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/bind"
	"github.com/runbot/runbot/runbooks/catalog"
	"github.com/runbot/runbot/runbooks/engine"
)

// wedgeParams keep the runbook's waits short, as runbooks/sglang_test.go
// does: the diagnosis logic is the same as with the production defaults.
var wedgeParams = map[string]string{"deployment": "sim", "probe_timeout": "6s", "samples": "3", "sample_interval": "1s", "stall_after": "3s", "slow_first_token": "2s"}

// runWedge runs the built-in wedge runbook against the simulated
// deployment, exactly as runbooks/sglang_test.go does.
func runWedge(t *testing.T, inv *inventory.Inventory) *runbooks.Report {
	t.Helper()
	cat, problems, err := catalog.Load()
	require.NoError(t, err)
	require.Empty(t, problems)
	rb, err := cat.Get("sglang-pd-wedge")
	require.NoError(t, err)
	pool := sshrun.NewPool()
	t.Cleanup(func() { _ = pool.Close() })
	e := &engine.Engine{Targets: &bind.InventoryTargets{Inventory: inv, Runners: &bind.PoolRunners{Inventory: inv, Pool: pool}}}
	p, err := e.Prepare(t.Context(), rb, wedgeParams)
	require.NoError(t, err)
	return e.Run(t.Context(), p, engine.RunOptions{})
}

// A live wedge, end to end: traffic through the simulated deployment, the
// pd-wedge fault, the shipped runbook, then the picture. In the decode
// lane's pixels there is progress while the traffic ran and none from the
// wedge until the check looked.
func TestLiveWedgeTimeline(t *testing.T) {
	dir := simtest.Up(t)
	var endpoints map[string]string
	raw, err := os.ReadFile(filepath.Join(dir, "endpoints.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &endpoints))
	inv, err := inventory.Load(filepath.Join(dir, "inventory.yaml"))
	require.NoError(t, err)

	loadStart := time.Now()
	out := simtest.Run(t, "load", "--rate", "5", "--duration", "5s", "--timeout", "3s", endpoints["router"])
	require.Contains(t, out, "timed_out=0", "healthy traffic completes")
	wedgeAt := time.Now()
	simtest.Run(t, "ctl", "--dir", dir, "fault", "pd-wedge")
	rep := runWedge(t, inv)

	c, err := FromReport(rep, Options{Window: 90 * time.Second})
	require.NoError(t, err)
	require.NotEmpty(t, c.Probes)
	img, l, err := c.draw(Width, Height)
	require.NoError(t, err)
	decode := laneOf(t, l, "decode")
	require.True(t, decode.lane.Stalled, "decode stalled")
	// SGLang stamps lines to the second: allow one either side.
	require.False(t, decode.lane.Last.Before(loadStart.Truncate(time.Second)), "last batch line during the traffic")
	require.False(t, decode.lane.Last.After(wedgeAt.Add(time.Second)), "last batch line before the wedge")
	requireProgressDuring(t, img, l, decode, loadStart, decode.lane.Last)
	requireNoProgressAfter(t, img, l, decode, wedgeAt.Add(2*time.Second))

	var echoes int
	for _, m := range decode.lane.Marks {
		if m.Echo() {
			echoes++
		}
	}
	require.Equal(t, 2, echoes, "each of our two timed-out chat probes echoed once")
}
