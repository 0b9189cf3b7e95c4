package dispatch

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/store"
)

// failingCreateRun fails the next n CreateRun calls, as a store whose
// primary was just lost does between a worker's claim and its run.
type failingCreateRun struct {
	store.Store
	left atomic.Int32
}

func (f *failingCreateRun) CreateRun(ctx context.Context, r store.Run) (store.Run, error) {
	if f.left.Add(-1) >= 0 {
		return store.Run{}, errors.New("begin: failed to connect: connection refused")
	}
	return f.Store.CreateRun(ctx, r)
}

// Work whose run could not be recorded goes back to the queue, its
// attempt uncounted, and runs once the store takes the run: it is not
// marked done with no run, which lost an alert during a failover.
func TestWorkWhoseRunCouldNotBeRecordedRunsLater(t *testing.T) {
	t.Parallel()
	failing := &failingCreateRun{}
	failing.left.Store(1)
	d, st, dir := newChatDispatcherWith(t, nil, testSetup{wrap: func(s store.Store) store.Store { failing.Store = s; return failing }})
	acc, err := d.Submit(t.Context(), Request{
		Runbook: "stuck-worker", Params: map[string]string{"host": "here", "dir": dir},
		RequestedBy: "alertmanager", Source: store.TriggerAlert, Key: "alert/fp/1",
	})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		w, err := st.GetWork(t.Context(), acc.WorkID)
		return err == nil && w.State == store.WorkDone
	}, 30*time.Second, 20*time.Millisecond, "the work runs after it was returned")
	require.NoError(t, d.Idle(t.Context()))
	w, err := st.GetWork(t.Context(), acc.WorkID)
	require.NoError(t, err)
	require.Equal(t, 1, w.Attempts, "the attempt that recorded no run is uncounted")
	require.NotEmpty(t, w.RunID, "the work has its run")
	run, err := st.GetRun(t.Context(), w.RunID)
	require.NoError(t, err)
	require.Equal(t, store.RunFinished, run.Status)
	runs, err := st.ListRuns(t.Context(), store.RunFilter{Runbook: "stuck-worker"})
	require.NoError(t, err)
	require.Len(t, runs, 1, "one run")
}
