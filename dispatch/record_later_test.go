package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/chat/chattest"
	"github.com/runbot/runbot/store"
)

// fullStore is the real store whose writes that record a run's end fail
// the first times, as on a full disk.
type fullStore struct {
	store.Store
	mu                     sync.Mutex
	failFinish, failDone   int
	finishCalls, doneCalls int
}

var errDiskFull = errors.New("commit: database or disk is full (13)")

func (f *fullStore) FinishRun(ctx context.Context, id string, status store.RunStatus, outcome store.Outcome, report json.RawMessage) (store.Run, error) {
	f.mu.Lock()
	f.finishCalls++
	fail := f.failFinish > 0
	if fail {
		f.failFinish--
	}
	f.mu.Unlock()
	if fail {
		return store.Run{}, errDiskFull
	}
	return f.Store.FinishRun(ctx, id, status, outcome, report)
}

func (f *fullStore) CompleteWork(ctx context.Context, id string) (store.Work, error) {
	f.mu.Lock()
	f.doneCalls++
	fail := f.failDone > 0
	if fail {
		f.failDone--
	}
	f.mu.Unlock()
	if fail {
		return store.Work{}, errDiskFull
	}
	return f.Store.CompleteWork(ctx, id)
}

// A run that ends while the store refuses writes is not left running (the
// next start would interrupt it and run it again, its verdict already
// posted): its end is kept and recorded once the store takes writes, and
// its work is marked done after that, never before.
func TestRunEndRecordedWhenTheStoreIsBack(t *testing.T) {
	t.Parallel()
	fs := &fullStore{failFinish: 2, failDone: 1}
	rec := chattest.New()
	d, st, dir := newChatDispatcherWith(t, rec, testSetup{wrap: func(s store.Store) store.Store { fs.Store = s; return fs }})
	acc, err := d.Submit(t.Context(), Request{
		Runbook: "stuck-worker", Params: map[string]string{"host": "here", "dir": dir},
		RequestedBy: "alertmanager", Source: store.TriggerAlert,
	})
	require.NoError(t, err)
	var run store.Run
	require.Eventually(t, func() bool {
		w, err := st.GetWork(t.Context(), acc.WorkID)
		require.NoError(t, err)
		if w.State != store.WorkDone {
			return false
		}
		run, err = st.GetRun(t.Context(), w.RunID)
		require.NoError(t, err)
		return true
	}, 30*time.Second, 50*time.Millisecond)
	require.Equal(t, store.RunFinished, run.Status, "the run ended as it did, not interrupted")
	require.NotEmpty(t, run.Report)
	fs.mu.Lock()
	defer fs.mu.Unlock()
	require.Equal(t, 3, fs.finishCalls, "the end was tried until the store took it")
	require.Equal(t, 2, fs.doneCalls, "the work was marked done once the end was in, and again after that failed")
	require.Len(t, rec.Posts(), 1, "posted once")
}
