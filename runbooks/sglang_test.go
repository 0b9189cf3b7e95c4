package runbooks_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/checks"
	"github.com/runbot/runbot/internal/simtest"
	"github.com/runbot/runbot/inventory"
	"github.com/runbot/runbot/remote/sshrun"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/bind"
	"github.com/runbot/runbot/runbooks/catalog"
	"github.com/runbot/runbot/runbooks/engine"
)

// simDeployment starts a simulated PD deployment at the simulator's own
// defaults and stops it when the test ends.
func simDeployment(t *testing.T, args ...string) (dir string, inv *inventory.Inventory) {
	t.Helper()
	dir = t.TempDir()
	simtest.Run(t, append([]string{"up", "--dir", dir}, args...)...)
	t.Cleanup(func() {
		// The test's context is already done when cleanups run.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = exec.CommandContext(ctx, simtest.Binary(t), "down", "--dir", dir).Run()
	})
	inv, err := inventory.Load(filepath.Join(dir, "inventory.yaml"))
	require.NoError(t, err)
	return dir, inv
}

func simCtl(t *testing.T, dir string, args ...string) {
	t.Helper()
	simtest.Run(t, append([]string{"ctl", "--dir", dir}, args...)...)
}

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
	// The runbook's production defaults: the 35 s probe included.
	p, err := e.Prepare(t.Context(), rb, map[string]string{"deployment": "sim"})
	require.NoError(t, err)
	return e.Run(t.Context(), p, engine.RunOptions{})
}

func diagnosisIDs(rep *runbooks.Report) []string {
	var ids []string
	for _, d := range rep.Diagnoses {
		ids = append(ids, d.ID)
	}
	return ids
}

func findingIDs(rep *runbooks.Report) []string {
	var ids []string
	for _, f := range rep.Findings {
		ids = append(ids, f.ID)
	}
	return ids
}

// TestWedgeEchoesAreNotCauses: the abort lines caused by the run's own
// chat probes are reported as echoes, and the burst as unexplained, on the
// simulator's defaults: NIXL failure text without "Aborted", engine-minted
// request ids and SGLang's seconds of abort latency. (Every
// fault under every condition, at production defaults, is in
// TestScenarioMatrix.)
func TestWedgeEchoesAreNotCauses(t *testing.T) {
	dir, inv := simDeployment(t)
	simCtl(t, dir, "fault", "pd-wedge")
	rep := runWedge(t, inv)
	var lb checks.LogProgressOutput
	var probeIDs []string
	for _, s := range rep.Steps {
		switch s.Step {
		case "decode_aborts":
			lb = s.Values.(checks.LogProgressOutput)
		case "chat", "chat_next":
			probeIDs = append(probeIDs, s.Values.(checks.HTTPProbeOutput).RequestID)
		}
	}
	aborts := lb.Patterns["aborts"]
	require.Equal(t, 2, aborts.Echoes, "each chat probe's own timeout produced one abort")
	require.GreaterOrEqual(t, aborts.Unexplained, 8, "the burst of 8 aborted transfers is unexplained")
	// Engines mint their own request ids, as real SGLang does: our
	// probes' ids are in no line, and the echoes were found by time.
	for _, id := range probeIDs {
		require.NotContains(t, aborts.Rids, id)
	}
	var echoFinding string
	for _, f := range rep.Findings {
		if f.ID == "aborts_are_echoes" {
			echoFinding = f.Summary
		}
	}
	require.Contains(t, echoFinding, "own probe", echoFinding)
}
