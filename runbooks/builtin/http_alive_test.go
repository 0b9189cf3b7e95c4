package builtin_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/inventory"
	"github.com/runbot/runbot/remote/sshrun"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/bind"
	"github.com/runbot/runbot/runbooks/engine"
	"github.com/runbot/runbot/runbooks/replay"
)

// simRouterURL reads the simulated deployment's router address from the
// inventory sglang-sim wrote.
func simRouterURL(t *testing.T, inv *inventory.Inventory) string {
	t.Helper()
	d, err := inv.Deployment("sim")
	require.NoError(t, err)
	r, err := d.Role("router")
	require.NoError(t, err)
	return r.URL
}

// runBuiltin runs a shipped runbook with params against an inventory, the
// catalog loaded as the binary loads it (no problems allowed, warnings
// included). The run is recorded, and the recording must replay to the
// same findings and diagnoses; with -update and a case name it becomes
// the runbook's recorded case (testdata/recordings/RUNBOOK/CASE,
// which RUNBOOK_test.yaml names).
func runBuiltin(t *testing.T, inv *inventory.Inventory, name, caseName string, params map[string]string) *runbooks.Report {
	t.Helper()
	rb := builtin(t, name)
	pool := sshrun.NewPool()
	t.Cleanup(func() { _ = pool.Close() })
	rec := replay.NewRecording()
	e := &engine.Engine{
		Targets: &bind.InventoryTargets{Inventory: inv, Runners: &bind.PoolRunners{Inventory: inv, Pool: pool}},
		Tape:    rec,
	}
	p, err := e.Prepare(t.Context(), rb, params)
	require.NoError(t, err)
	rep := e.Run(t.Context(), p, engine.RunOptions{})
	out := filepath.Join(t.TempDir(), "recording")
	require.NoError(t, rec.Save(out, rep, replay.SaveOptions{}))
	again := replayDir(t, name, out)
	require.Equal(t, findingIDs(rep), findingIDs(again), "the recording replays to the same findings")
	require.Equal(t, diagnosisIDs(rep), diagnosisIDs(again), "the recording replays to the same diagnoses")
	if *update && caseName != "" {
		dst := filepath.Join("testdata", "recordings", name, caseName)
		require.NoError(t, os.RemoveAll(dst))
		require.NoError(t, os.MkdirAll(filepath.Dir(dst), 0o755))
		require.NoError(t, os.CopyFS(dst, os.DirFS(out)))
	}
	return rep
}

// TestHTTPAliveNotWorkingAgainstTheSimulator runs http-alive-not-working
// against the simulated SGLang router under each fault that has a
// generic HTTP face: the wedge (health 200, the chat request hangs with 0
// bytes), a slow first token, the router down, and healthy. The runbook
// knows nothing about SGLang; it is given the two URLs and a chat body.
func TestHTTPAliveNotWorkingAgainstTheSimulator(t *testing.T) {
	cases := []struct {
		name      string
		fault     []string // sglang-sim ctl fault args; nil for none
		diagnoses []string
		findings  []string
		absent    []string
	}{
		{name: "healthy", diagnoses: []string{"healthy"}, findings: []string{"health_ok", "serving"}, absent: []string{"request_slow", "hung_with_no_bytes"}},
		{name: "pd-wedge", fault: []string{"pd-wedge"}, diagnoses: []string{"alive_not_working"}, findings: []string{"health_ok", "hung_with_no_bytes"}, absent: []string{"serving", "request_failing"}},
		{name: "slow", fault: []string{"slow", "--ttft", "7s"}, diagnoses: []string{"slow"}, findings: []string{"health_ok", "serving", "request_slow"}, absent: []string{"hung_with_no_bytes"}},
		{name: "router-down", fault: []string{"router-down"}, diagnoses: []string{"down"}, findings: []string{"service_down"}, absent: []string{"health_ok", "serving"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir, inv := simDeployment(t)
			router := simRouterURL(t, inv)
			if c.fault != nil {
				simCtl(t, dir, append([]string{"fault"}, c.fault...)...)
			}
			body, err := json.Marshal(map[string]any{
				"model":      "default",
				"messages":   []map[string]string{{"role": "user", "content": "runbot probe: say ok"}},
				"max_tokens": 8,
				"stream":     true,
			})
			require.NoError(t, err)
			start := time.Now()
			// The runbook's own defaults otherwise: 30 s for the real
			// request, 5 s for health and for slow.
			rep := runBuiltin(t, inv, "http-alive-not-working", c.name, map[string]string{
				"host":       "local",
				"health_url": router + "/health",
				"url":        router + "/v1/chat/completions",
				"method":     "POST",
				"body":       string(body),
				"stream":     "true",
			})
			t.Logf("%s in %s: findings %v, diagnoses %v", c.name, time.Since(start).Round(time.Millisecond), findingIDs(rep), diagnosisIDs(rep))
			for _, f := range rep.Findings {
				t.Logf("  %s: %s", f.ID, f.Summary)
			}
			require.Empty(t, rep.Inconclusive)
			require.ElementsMatch(t, c.diagnoses, diagnosisIDs(rep))
			got := findingIDs(rep)
			for _, f := range c.findings {
				require.Contains(t, got, f)
			}
			for _, f := range c.absent {
				require.NotContains(t, got, f)
			}
		})
	}
}

// TestHTTPAliveNotWorkingBadStatus: a real request that is answered with
// an error status while /health says 200 is alive-not-working too, told
// apart from a hang by its outcome. The simulator's router answers an
// unknown path with 404, which stands in for an application's 5xx.
func TestHTTPAliveNotWorkingBadStatus(t *testing.T) {
	_, inv := simDeployment(t)
	router := simRouterURL(t, inv)
	rep := runBuiltin(t, inv, "http-alive-not-working", "bad-status", map[string]string{
		"host":       "local",
		"health_url": router + "/health",
		"url":        router + "/v1/no-such-endpoint",
	})
	require.ElementsMatch(t, []string{"alive_not_working"}, diagnosisIDs(rep))
	require.Contains(t, findingIDs(rep), "request_failing")
	require.NotContains(t, findingIDs(rep), "hung_with_no_bytes")
}
