package dispatch

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/inventory"
	"github.com/runbot/runbot/runbooks/bind"
	"github.com/runbot/runbot/runbooks/catalog"
	"github.com/runbot/runbot/runbooks/engine"
	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/store"
)

// gateRunbook waits, once started, until dir/go exists, and prints
// version: a run's report says which version of the runbook it followed.
func gateRunbook(version string) string {
	return fmt.Sprintf(`name: gate
params:
  host: {type: host, required: true}
  dir: {type: string, required: true}
steps:
  - {id: wait, check: command, target: host, timeout: 1m, with: {cmd: 'touch {{ .params.dir }}/started-%[1]s; while [ ! -e {{ .params.dir }}/go ]; do sleep 0.01; done; echo %[1]s'}}
findings:
  - {id: done, severity: info, when: 'steps.wait.stdout != ""', summary: done}
`, version)
}

// setOf loads a catalog of one gate runbook of version, over the test
// inventory, as a reload would build it.
func setOf(t *testing.T, st store.Store, version string) Set {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "gate.yaml"), []byte(gateRunbook(version)), 0o600))
	cat, problems, err := catalog.Load(dir)
	require.NoError(t, err)
	require.Empty(t, problems)
	inv, err := inventory.Load("testdata/inventory.yaml")
	require.NoError(t, err)
	eng := &engine.Engine{Targets: &bind.InventoryTargets{Inventory: inv, Runners: bind.LocalRunners{}}}
	return Set{Catalog: cat, Engine: eng, Remediator: &remediation.Remediator{Engine: eng, Store: st, Catalog: cat}}
}

// A run in flight when the set is swapped finishes on the runbook it
// started with; work submitted after the swap runs the new one, and a
// runbook the new set lacks is refused.
func TestSwapLeavesRunsInFlightOnTheirSet(t *testing.T) {
	t.Parallel()
	d, st, dir := newChatDispatcher(t, nil)
	require.NoError(t, d.Swap(setOf(t, st, "one")))
	params := map[string]string{"host": "here", "dir": dir}
	first, err := d.Submit(t.Context(), Request{Runbook: "gate", Params: params, RequestedBy: "test", Source: store.TriggerChat})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(dir, "started-one"))
		return err == nil
	}, time.Minute, 10*time.Millisecond, "the first run starts")

	require.NoError(t, d.Swap(setOf(t, st, "two")))
	_, err = d.Submit(t.Context(), Request{Runbook: "stuck-worker", Params: params, RequestedBy: "test", Source: store.TriggerChat})
	var unknown *UnknownRunbookError
	require.ErrorAs(t, err, &unknown, "the new set has no stuck-worker")
	second, err := d.Submit(t.Context(), Request{Runbook: "gate", Params: params, RequestedBy: "test", Source: store.TriggerChat})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go"), nil, 0o600))
	require.NoError(t, d.Idle(t.Context()))

	for _, tc := range []struct {
		work      string
		want, not string
	}{
		{first.WorkID, "one", "two"},
		{second.WorkID, "two", "one"},
	} {
		w, err := st.GetWork(t.Context(), tc.work)
		require.NoError(t, err)
		run, err := st.GetRun(t.Context(), w.RunID)
		require.NoError(t, err)
		require.Equal(t, store.RunFinished, run.Status)
		require.Contains(t, string(run.Report), `"`+tc.want+`\n"`)
		require.NotContains(t, string(run.Report), `"`+tc.not+`\n"`)
	}
	require.Error(t, d.Swap(Set{}), "a set without a catalog is refused")
	_, err = d.Runbook("gate")
	require.NoError(t, err, "a refused swap changes nothing")
}
