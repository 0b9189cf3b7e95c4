package runbooks_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/checks"
	"github.com/runbot/runbot/internal/simtest"
	"github.com/runbot/runbot/inventory"
	"github.com/runbot/runbot/remote"
	"github.com/runbot/runbot/runbooks"
)

// simDeployment starts a simulated PD deployment, fast-paced for tests,
// and stops it when the test ends.
func simDeployment(t *testing.T, args ...string) (dir string, inv *inventory.Inventory) {
	t.Helper()
	dir = simtest.Up(t, args...)
	inv, err := inventory.Load(filepath.Join(dir, "inventory.yaml"))
	require.NoError(t, err)
	return dir, inv
}

func simCtl(t *testing.T, dir string, args ...string) {
	t.Helper()
	simtest.Run(t, append([]string{"ctl", "--dir", dir}, args...)...)
}

// wedgeParams keep the runbook's waits short: the diagnosis logic is the
// same as with the production defaults.
var wedgeParams = map[string]string{"deployment": "sim", "probe_timeout": "6s", "samples": "3", "sample_interval": "1s", "stall_after": "3s", "slow_first_token": "2s"}

func runWedge(t *testing.T, inv *inventory.Inventory) *runbooks.Report {
	t.Helper()
	catalog, problems, err := runbooks.LoadCatalog()
	require.NoError(t, err)
	require.Empty(t, problems)
	rb, err := catalog.Get("sglang-pd-wedge")
	require.NoError(t, err)
	pool := remote.NewPool()
	t.Cleanup(func() { _ = pool.Close() })
	e := &runbooks.Engine{Targets: &runbooks.InventoryTargets{Inventory: inv, Runners: &runbooks.PoolRunners{Inventory: inv, Pool: pool}}}
	p, err := e.Prepare(t.Context(), rb, wedgeParams)
	require.NoError(t, err)
	return e.Run(t.Context(), p, runbooks.RunOptions{})
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

// TestWedgeRunbookScenarios runs the shipped runbook against each scenario
// of the simulator and expects exactly one diagnosis.
func TestWedgeRunbookScenarios(t *testing.T) {
	cases := []struct {
		name        string
		fault       []string
		diagnosis   string
		remediation string
		findings    []string
	}{
		{name: "healthy", diagnosis: "healthy"},
		{name: "wedge", fault: []string{"pd-wedge"}, diagnosis: "pd_transfer_wedge", remediation: "disable_overlap_and_restart",
			findings: []string{"alive_not_working", "decode_stalled", "prefill_parked", "unexplained_aborts", "overlap_schedule_on"}},
		{name: "decode crash", fault: []string{"decode-crash"}, diagnosis: "decode_down"},
		{name: "router down", fault: []string{"router-down"}, diagnosis: "router_down"},
		{name: "slow", fault: []string{"slow", "--ttft", "3s"}, diagnosis: "slow_but_serving"},
		{name: "stale sample", fault: []string{"stale-sample", "--scrapes", "1", "--value", "2"}, diagnosis: "healthy", findings: []string{"stale_gauge"}},
		{name: "prefill stall", fault: []string{"prefill-stall"}, diagnosis: "prefill_stalled"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir, inv := simDeployment(t)
			if c.fault != nil {
				simCtl(t, dir, append([]string{"fault"}, c.fault...)...)
			}
			rep := runWedge(t, inv)
			require.Equal(t, []string{c.diagnosis}, diagnosisIDs(rep), "findings: %v; inconclusive: %v", findingIDs(rep), rep.Inconclusive)
			require.Equal(t, c.remediation, rep.Diagnoses[0].Remediation)
			for _, f := range c.findings {
				require.Contains(t, findingIDs(rep), f)
			}
		})
	}
}

// TestWedgeEchoesAreNotCauses: the abort line caused by the run's own
// chat probe is reported as an echo, and the burst as unexplained.
func TestWedgeEchoesAreNotCauses(t *testing.T) {
	dir, inv := simDeployment(t)
	simCtl(t, dir, "fault", "pd-wedge")
	rep := runWedge(t, inv)
	var lb checks.LogProgressOutput
	var probeID string
	for _, s := range rep.Steps {
		switch s.Step {
		case "last_batch":
			lb = s.Values.(checks.LogProgressOutput)
		case "chat":
			probeID = s.Values.(checks.HTTPProbeOutput).RequestID
		}
	}
	aborts := lb.Patterns["aborts"]
	require.Equal(t, 1, aborts.Echoes, "the chat probe's own timeout produced one abort")
	require.GreaterOrEqual(t, aborts.Unexplained, 8, "the burst of 8 aborted transfers is unexplained")
	require.Contains(t, aborts.Rids, probeID)
	var echoFinding string
	for _, f := range rep.Findings {
		if f.ID == "aborts_are_echoes" {
			echoFinding = f.Summary
		}
	}
	require.True(t, strings.Contains(echoFinding, "own probe"), echoFinding)
}
