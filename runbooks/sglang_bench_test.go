package runbooks_test

import (
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
	cat, _, err := catalog.Load()
	require.NoError(b, err)
	rb, err := cat.Get("sglang-pd-wedge")
	require.NoError(b, err)
	pool := sshrun.NewPool()
	defer func() { _ = pool.Close() }() // benchmark cleanup
	e := &engine.Engine{Targets: &bind.InventoryTargets{Inventory: inv, Runners: &bind.PoolRunners{Inventory: inv, Pool: pool}}}
	p, err := e.Prepare(b.Context(), rb, map[string]string{"deployment": "sim"})
	require.NoError(b, err)
	var ratio, wall float64
	for b.Loop() {
		rep := e.Run(b.Context(), p, engine.RunOptions{})
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

// BenchmarkTimeToVerdict measures, per scenario of the simulator at its
// defaults, how long the shipped wedge runbook takes to settle its verdict,
// and how long the same runbook as it was before verdicts settled early
// (runbooks/testdata/bench/sglang-pd-wedge-before.yaml) takes to finish:
// today's wall time, measured on the same deployment in the same run.
//
//	go test -run '^$' -bench TimeToVerdict -benchtime 1x -timeout 30m ./runbooks
func BenchmarkTimeToVerdict(b *testing.B) {
	simBinary = simtest.Binary(b)
	cat, problems, err := catalog.Load("testdata/bench")
	require.NoError(b, err)
	require.Empty(b, problems)
	now, err := cat.Get("sglang-pd-wedge")
	require.NoError(b, err)
	before, err := cat.Get("sglang-pd-wedge-before")
	require.NoError(b, err)
	conds := map[string]matrixCondition{}
	for _, c := range matrixConditions {
		conds[c.name] = c
	}
	type scenario struct {
		fault     matrixFault
		condition matrixCondition
	}
	var scenarios []scenario
	for _, f := range matrixFaults {
		scenarios = append(scenarios, scenario{f, conds["fresh"]})
	}
	scenarios = append(scenarios, scenario{matrixFaults[1], conds["aged"]}, scenario{matrixFaults[0], conds["heavy"]})
	for _, sc := range scenarios {
		b.Run(sc.fault.name+"/"+sc.condition.name, func(b *testing.B) {
			inv, stop, err := prepareCell(b.Context(), sc.fault, sc.condition)
			defer stop()
			require.NoError(b, err)
			pool := sshrun.NewPool()
			defer func() { _ = pool.Close() }() // benchmark cleanup
			e := &engine.Engine{Targets: &bind.InventoryTargets{Inventory: inv, Runners: &bind.PoolRunners{Inventory: inv, Pool: pool}}}
			run := func(rb *runbooks.Runbook) *runbooks.Report {
				p, err := e.Prepare(b.Context(), rb, map[string]string{"deployment": "sim"})
				require.NoError(b, err)
				return e.Run(b.Context(), p, engine.RunOptions{})
			}
			var verdict, wall, old float64
			for b.Loop() {
				rep := run(now)
				require.Equal(b, []string{sc.fault.diagnosis}, diagnosisIDs(rep))
				verdict, wall = rep.VerdictAt.Sub(rep.StartedAt).Seconds(), rep.FinishedAt.Sub(rep.StartedAt).Seconds()
				prev := run(before)
				old = prev.FinishedAt.Sub(prev.StartedAt).Seconds()
			}
			b.ReportMetric(verdict, "verdict-s")
			b.ReportMetric(wall, "wall-s")
			b.ReportMetric(old, "before-wall-s")
			b.ReportMetric(old/verdict, "before-wall/verdict")
		})
	}
}
