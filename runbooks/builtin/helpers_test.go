// The tests of the shipped runbooks' content: each runs a runbook of this
// directory against real parts (sshd with stand-in tools, the simulator),
// checks its verdict, and checks that the run's recording replays to the
// same verdict; with -update they rewrite the recorded cases the runbooks'
// own test files (RUNBOOK_test.yaml) replay.
package builtin_test

import (
	"context"
	"flag"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/simtest"
	"github.com/runbot/runbot/inventory"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/catalog"
	"github.com/runbot/runbot/runbooks/replay"
)

var update = flag.Bool("update", false, "rewrite the recorded cases")

// builtin is a shipped runbook, from the catalog as the binary loads it
// (no problems allowed, warnings included).
func builtin(tb testing.TB, name string) *runbooks.Runbook {
	tb.Helper()
	cat, problems, err := catalog.Load()
	require.NoError(tb, err)
	require.Empty(tb, problems)
	rb, err := cat.Get(name)
	require.NoError(tb, err)
	return rb
}

// replayDir replays the recording in dir against the shipped runbook.
func replayDir(tb testing.TB, name, dir string) *runbooks.Report {
	tb.Helper()
	rec, err := replay.LoadRecording(dir)
	require.NoError(tb, err)
	rep, err := replay.Replay(tb.Context(), builtin(tb, name), rec, replay.ReplayOptions{})
	require.NoError(tb, err)
	return rep
}

// simDeployment starts a simulated SGLang deployment, stopped when the
// test ends, and returns its directory and the inventory it wrote.
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

// simCtl sends a command (a fault) to the simulated deployment in dir.
func simCtl(t *testing.T, dir string, args ...string) {
	t.Helper()
	simtest.Run(t, append([]string{"ctl", "--dir", dir}, args...)...)
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
