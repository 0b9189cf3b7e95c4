package store_test

import (
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/store"
)

func TestWorkQueue(t *testing.T) {
	s, c := openTest(t)
	ctx := testCtx(t)
	_, err := s.ClaimWork(ctx)
	require.ErrorIs(t, err, store.ErrNoWork)

	first, created, err := s.Enqueue(ctx, store.Work{Trigger: store.TriggerSlack, Runbook: "sglang-pd-wedge", Key: "Ev01",
		Params: map[string]string{"deployment": "dsv4"}, RequestedBy: "U-alice", Payload: json.RawMessage(`{"command":"/runbot"}`)})
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, store.WorkPending, first.State)
	c.Advance(time.Second)
	second, _, err := s.Enqueue(ctx, store.Work{Trigger: store.TriggerSchedule, Runbook: "disk-audit"})
	require.NoError(t, err)

	dup, created, err := s.Enqueue(ctx, store.Work{Trigger: store.TriggerSlack, Runbook: "sglang-pd-wedge", Key: "Ev01"})
	require.NoError(t, err)
	require.False(t, created, "Slack retried the event")
	require.Equal(t, first, dup)

	c.Advance(time.Second)
	w, err := s.ClaimWork(ctx)
	require.NoError(t, err)
	require.Equal(t, first.ID, w.ID, "oldest first")
	require.Equal(t, store.WorkStarted, w.State)
	require.Equal(t, 1, w.Attempts)
	require.Equal(t, c.Now(), w.StartedAt)
	require.Equal(t, map[string]string{"deployment": "dsv4"}, w.Params)
	require.JSONEq(t, `{"command":"/runbot"}`, string(w.Payload))

	done, err := s.CompleteWork(ctx, w.ID)
	require.NoError(t, err)
	require.Equal(t, store.WorkDone, done.State)
	_, err = s.CompleteWork(ctx, w.ID)
	var conflict *store.StateConflictError
	require.ErrorAs(t, err, &conflict)
	_, err = s.CompleteWork(ctx, second.ID)
	require.ErrorAs(t, err, &conflict, "pending work is claimed before it is done")
	_, err = s.CompleteWork(ctx, "w-missing")
	require.ErrorIs(t, err, store.ErrNotFound)

	got, err := s.GetWork(ctx, second.ID)
	require.NoError(t, err)
	require.Equal(t, second, got)
}

// Workers in several goroutines claim from one queue: every item is
// claimed exactly once.
func TestWorkClaimedOnce(t *testing.T) {
	s, _ := openTest(t)
	ctx := testCtx(t)
	const n = 30
	for range n {
		_, _, err := s.Enqueue(ctx, store.Work{Trigger: store.TriggerAlert, Runbook: "sglang-pd-wedge"})
		require.NoError(t, err)
	}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		claimed = map[string]int{}
	)
	for range 4 {
		wg.Go(func() {
			for {
				w, err := s.ClaimWork(testCtx(t))
				if errors.Is(err, store.ErrNoWork) {
					return
				}
				if err != nil {
					t.Errorf("claim: %v", err)
					return
				}
				mu.Lock()
				claimed[w.ID]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.Len(t, claimed, n)
	for id, times := range claimed {
		require.Equal(t, 1, times, id)
	}
}
