package storetest

import (
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/store"
)

var workTests = []test{
	{"Queue", testWorkQueue},
	{"ClaimedOnce", testWorkClaimedOnce},
	{"ClaimedOnceAcrossStores", testWorkClaimedOnceAcrossStores},
	{"SurvivesReopen", testWorkSurvivesReopen},
	{"ReturnedWhenNoRun", testWorkReturnedWhenNoRun},
}

// A worker whose run could not be recorded (the store failed between the
// claim and the run) returns the work, uncounted, for any worker to claim;
// work with a recorded run, or not this process's, cannot be returned.
func testWorkReturnedWhenNoRun(t *testing.T, e *Env) {
	s, ctx := e.S, t.Context()
	queued, _, err := s.Enqueue(ctx, store.Work{Trigger: store.TriggerAlert, Runbook: "sglang-pd-wedge", Key: "alert/fp/1"})
	require.NoError(t, err)
	var conflict *store.StateConflictError
	_, err = s.ReturnWork(ctx, queued.ID)
	require.ErrorAs(t, err, &conflict, "pending work is not returned")

	w, err := s.ClaimWork(ctx)
	require.NoError(t, err)
	other := e.OpenAs(t, "storetest/other")
	_, err = other.ReturnWork(ctx, w.ID)
	require.ErrorAs(t, err, &conflict, "only the claimer returns it")

	back, err := s.ReturnWork(ctx, w.ID)
	require.NoError(t, err)
	require.Equal(t, store.WorkPending, back.State)
	require.Zero(t, back.Attempts, "nothing ran: the attempt is uncounted")
	require.Empty(t, back.Owner)

	again, err := other.ClaimWork(ctx)
	require.NoError(t, err)
	require.Equal(t, w.ID, again.ID, "another worker claims it")
	require.Equal(t, 1, again.Attempts)
	// Its run's creation committed, but the worker never heard so: the
	// run row is there, running, and nothing ran under it.
	stray, err := other.CreateRun(ctx, store.Run{Runbook: again.Runbook, Trigger: again.Trigger, WorkID: again.ID})
	require.NoError(t, err)
	back, err = other.ReturnWork(ctx, again.ID)
	require.NoError(t, err)
	require.Equal(t, store.WorkPending, back.State)
	_, err = other.GetRun(ctx, stray.ID)
	require.ErrorIs(t, err, store.ErrNotFound, "the unconfirmed run is withdrawn: one run per work in history")
	withdrawn, err := other.Audit(ctx, store.AuditFilter{RunID: stray.ID, Kind: store.AuditRunWithdrawn})
	require.NoError(t, err)
	require.Len(t, withdrawn, 1, "the withdrawal is audited")
	running, err := other.ListRuns(ctx, store.RunFilter{Status: store.RunRunning})
	require.NoError(t, err)
	require.Empty(t, running)
	_, err = s.ReturnWork(ctx, "w-missing")
	require.ErrorIs(t, err, store.ErrNotFound)
}

func testWorkQueue(t *testing.T, e *Env) {
	s, c, ctx := e.S, e.Clock, t.Context()
	_, err := s.ClaimWork(ctx)
	require.ErrorIs(t, err, store.ErrNoWork)

	first, created, err := s.Enqueue(ctx, store.Work{Trigger: store.TriggerChat, Runbook: "sglang-pd-wedge", Key: "Ev01",
		Params: map[string]string{"deployment": "dsv4"}, RequestedBy: "U-alice", Payload: json.RawMessage(`{"command":"/runbot"}`)})
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, store.WorkPending, first.State)
	c.Advance(time.Second)
	second, _, err := s.Enqueue(ctx, store.Work{Trigger: store.TriggerSchedule, Runbook: "disk-audit"})
	require.NoError(t, err)

	dup, created, err := s.Enqueue(ctx, store.Work{Trigger: store.TriggerChat, Runbook: "sglang-pd-wedge", Key: "Ev01"})
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
	require.Equal(t, MainOwner, w.Owner, "the claiming process owns it")
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
	_, err = s.GetWork(ctx, "w-missing")
	require.ErrorIs(t, err, store.ErrNotFound)

	dup, created, err = s.Enqueue(ctx, store.Work{Trigger: store.TriggerChat, Runbook: "sglang-pd-wedge", Key: "Ev01"})
	require.NoError(t, err)
	require.False(t, created, "a key is deduplicated after its work is done too")
	require.Equal(t, first.ID, dup.ID)

	_, _, err = s.Enqueue(ctx, store.Work{Trigger: store.TriggerChat})
	require.Error(t, err, "a runbook is required")
	_, _, err = s.Enqueue(ctx, store.Work{Trigger: store.TriggerChat, Runbook: "x", Payload: json.RawMessage(`{`)})
	require.Error(t, err, "a payload is JSON")
}

// claimAll has workers goroutines on each store claim from the queue until
// it is empty and returns how often each item was claimed.
func claimAll(t *testing.T, stores []store.Store, workers int) map[string]int {
	t.Helper()
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		claimed = map[string]int{}
	)
	for _, s := range stores {
		for range workers {
			wg.Go(func() {
				for {
					w, err := s.ClaimWork(t.Context())
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
	}
	wg.Wait()
	return claimed
}

func enqueueN(t *testing.T, s store.Store, n int) {
	t.Helper()
	for range n {
		_, _, err := s.Enqueue(t.Context(), store.Work{Trigger: store.TriggerAlert, Runbook: "sglang-pd-wedge"})
		require.NoError(t, err)
	}
}

// Workers in several goroutines claim from one queue: every item is
// claimed exactly once.
func testWorkClaimedOnce(t *testing.T, e *Env) {
	const n = 30
	enqueueN(t, e.S, n)
	claimed := claimAll(t, []store.Store{e.S}, 4)
	require.Len(t, claimed, n)
	for id, times := range claimed {
		require.Equal(t, 1, times, id)
	}
}

// Workers of two processes on one database share the queue: every item is
// claimed exactly once, by one of them.
func testWorkClaimedOnceAcrossStores(t *testing.T, e *Env) {
	const n = 30
	other := e.OpenAs(t, "storetest/replica")
	enqueueN(t, other, n)
	claimed := claimAll(t, []store.Store{e.S, other}, 2)
	require.Len(t, claimed, n)
	for id, times := range claimed {
		require.Equal(t, 1, times, id)
	}
}

// Work accepted before a restart is claimed after it.
func testWorkSurvivesReopen(t *testing.T, e *Env) {
	w, _, err := e.S.Enqueue(t.Context(), store.Work{Key: "Ev02", Trigger: store.TriggerChat, Runbook: "host-basics",
		Params: map[string]string{"host": "gpu-1"}})
	require.NoError(t, err)
	s := e.Reopen(t)
	got, err := s.ClaimWork(t.Context())
	require.NoError(t, err)
	require.Equal(t, w.ID, got.ID)
	require.Equal(t, map[string]string{"host": "gpu-1"}, got.Params)
	_, created, err := s.Enqueue(t.Context(), store.Work{Key: "Ev02", Trigger: store.TriggerChat, Runbook: "host-basics"})
	require.NoError(t, err)
	require.False(t, created, "the dedup key outlives the restart")
}
