package runbooks_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/simtest"
	"github.com/runbot/runbot/inventory"
	"github.com/runbot/runbot/remote"
	"github.com/runbot/runbot/runbooks"
)

// BenchmarkWedgeRunbookWallVsLongestStep runs the shipped wedge runbook,
// with its production waits (35 s chat probe, 5 samples 2 s apart), against
// a wedged simulator and reports the run's wall time divided by its
// longest single step: steps run at once, so this stays near 1, not near
// the sum of the waits.
//
//	go test -run '^$' -bench WedgeRunbook -benchtime 1x ./runbooks
func BenchmarkWedgeRunbookWallVsLongestStep(b *testing.B) {
	dir := simtest.Up(b)
	simtest.Run(b, "ctl", "--dir", dir, "fault", "pd-wedge")
	inv, err := inventory.Load(filepath.Join(dir, "inventory.yaml"))
	require.NoError(b, err)
	catalog, _, err := runbooks.LoadCatalog()
	require.NoError(b, err)
	rb, err := catalog.Get("sglang-pd-wedge")
	require.NoError(b, err)
	pool := remote.NewPool()
	defer func() { _ = pool.Close() }() // benchmark cleanup
	e := &runbooks.Engine{Targets: &runbooks.InventoryTargets{Inventory: inv, Runners: &runbooks.PoolRunners{Inventory: inv, Pool: pool}}}
	p, err := e.Prepare(b.Context(), rb, map[string]string{"deployment": "sim"})
	require.NoError(b, err)
	var ratio, wall float64
	for b.Loop() {
		rep := e.Run(b.Context(), p, runbooks.RunOptions{})
		var longest, sum time.Duration
		for _, s := range rep.Steps {
			longest = max(longest, s.Duration)
			sum += s.Duration
		}
		w := rep.FinishedAt.Sub(rep.StartedAt)
		ratio, wall = w.Seconds()/longest.Seconds(), w.Seconds()
		b.ReportMetric(sum.Seconds()/w.Seconds(), "sum-of-steps/wall")
	}
	b.ReportMetric(ratio, "wall/longest-step")
	b.ReportMetric(wall, "wall-s")
}
