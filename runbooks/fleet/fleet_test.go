package fleet_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/inventory"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/bind"
	"github.com/runbot/runbot/runbooks/fleet"
	"github.com/runbot/runbot/store"
)

// A fleet run runs every deployment that can run the runbook, records
// each run, says why the others were not run, and sums up with the worst
// outcome.
func TestRun(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	rb, problems, err := runbooks.LoadFile("testdata/app-check.yaml")
	require.NoError(t, err)
	require.Empty(t, problems.Errors())
	inv, err := inventory.Load("testdata/inventory.yaml")
	require.NoError(t, err)
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "runbot.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	members, err := bind.SelectDeployments(rb, inv, "")
	require.NoError(t, err)
	eng, closeRunners := bind.NewEngine(inv)
	t.Cleanup(closeRunners)

	runs, err := fleet.Run(ctx, eng, st, rb, members, fleet.Options{Params: map[string]string{"marker": "fine"}, Parallel: 2, RequestedBy: "alice"})
	require.NoError(t, err)
	got := map[string]fleet.Result{}
	for _, r := range runs {
		got[r.Deployment] = r
	}
	require.Len(t, runs, 4, "one result per member, in order")
	require.Equal(t, "batch-1", runs[0].Deployment)
	require.Contains(t, got["batch-1"].Error, "has no role app")
	require.Empty(t, got["batch-1"].RunID)
	require.Equal(t, []string{"app_down"}, got["web-broken"].Diagnoses)
	require.Equal(t, runbooks.OutcomeCritical, got["web-broken"].Outcome)
	for _, name := range []string{"web-a", "web-b"} {
		r := got[name]
		require.Equal(t, []string{"app_up"}, r.Diagnoses, name)
		require.Equal(t, "fine", r.Report.Params["marker"], "the shared params reach every deployment")
		stored, err := st.GetRun(ctx, r.RunID)
		require.NoError(t, err, "the run of %s is recorded", name)
		require.Equal(t, "alice", stored.RequestedBy)
		require.Equal(t, store.TriggerCLI, stored.Trigger)
		require.Equal(t, name, stored.Params["deployment"])
	}
	require.Equal(t, runbooks.OutcomeCritical, fleet.Worst(runs))
}

// A fleet run whose context has ended starts nothing more and says so.
func TestRunAfterCancel(t *testing.T) {
	t.Parallel()
	rb, _, err := runbooks.LoadFile("testdata/app-check.yaml")
	require.NoError(t, err)
	inv, err := inventory.Load("testdata/inventory.yaml")
	require.NoError(t, err)
	st, err := store.Open(t.Context(), filepath.Join(t.TempDir(), "runbot.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	members, err := bind.SelectDeployments(rb, inv, "web-*")
	require.NoError(t, err)
	eng, closeRunners := bind.NewEngine(inv)
	t.Cleanup(closeRunners)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	runs, err := fleet.Run(ctx, eng, st, rb, members, fleet.Options{Parallel: 1})
	require.NoError(t, err)
	for _, r := range runs {
		require.NotEmpty(t, r.Error, r.Deployment)
	}
	require.Equal(t, runbooks.OutcomeInconclusive, fleet.Worst(runs))
}

func TestWorst(t *testing.T) {
	t.Parallel()
	ok := fleet.Result{Outcome: runbooks.OutcomeOK}
	for name, tc := range map[string]struct {
		runs []fleet.Result
		want runbooks.Outcome
	}{
		"all ok":        {runs: []fleet.Result{ok, ok}, want: runbooks.OutcomeOK},
		"one not run":   {runs: []fleet.Result{ok, {Error: "no role app"}}, want: runbooks.OutcomeInconclusive},
		"inconclusive":  {runs: []fleet.Result{{Outcome: runbooks.OutcomeInconclusive}, ok}, want: runbooks.OutcomeInconclusive},
		"critical wins": {runs: []fleet.Result{{Error: "x"}, {Outcome: runbooks.OutcomeCritical}, ok}, want: runbooks.OutcomeCritical},
	} {
		require.Equal(t, tc.want, fleet.Worst(tc.runs), name)
	}
}
