package storetest

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/store"
)

var alertTests = []test{
	{"Dedup", testAlertDedup},
	{"DedupConcurrentDeliveries", testAlertDedupConcurrentDeliveries},
	{"DedupAcrossStores", testAlertDedupAcrossStores},
	{"LinksToItsWorkAndRun", testAlertLinksToItsWorkAndRun},
	{"RecentWindow", testRecentAlertsWindow},
	{"Validates", testRecordAlertValidates},
	{"DurableAcrossReopen", testAlertsDurableAcrossReopen},
}

// Alertmanager re-sends a firing alert on every group_interval tick and
// retries failed deliveries; one trigger covers them all within the window.
func testAlertDedup(t *testing.T, e *Env) {
	s, c, ctx := e.S, e.Clock, t.Context() // one hour dedup window
	fp := "a1b2c3d4e5f60718"
	record := func(status string) store.AlertState {
		st, err := s.RecordAlert(ctx, fp, AlertPayload(status), c.Now())
		require.NoError(t, err)
		return st
	}
	t0 := c.Now()

	first := record("firing")
	require.True(t, first.Fresh)
	require.Equal(t, store.AlertFiring, first.Status)
	require.Equal(t, t0, first.FirstSeen)
	require.Equal(t, t0, first.TriggeredAt)
	require.Equal(t, 0, first.Repeats)
	require.NotEmpty(t, first.TriggerKey)

	for i := 1; i <= 3; i++ {
		c.Advance(5 * time.Minute)
		st := record("firing")
		require.False(t, st.Fresh, "delivery %d is a repeat", i)
		require.Equal(t, i, st.Repeats)
		require.Equal(t, first.TriggerKey, st.TriggerKey)
		require.Equal(t, c.Now(), st.LastSeen)
	}

	// Still firing after the window: a new trigger, a new run.
	c.Advance(45 * time.Minute)
	again := record("firing")
	require.True(t, again.Fresh)
	require.Equal(t, 0, again.Repeats)
	require.NotEqual(t, first.TriggerKey, again.TriggerKey)
	require.Equal(t, t0, again.FirstSeen)

	c.Advance(5 * time.Minute)
	resolved := record("resolved")
	require.False(t, resolved.Fresh)
	require.Equal(t, store.AlertResolved, resolved.Status)
	require.Equal(t, again.TriggerKey, resolved.TriggerKey)

	c.Advance(time.Minute)
	refired := record("firing")
	require.True(t, refired.Fresh, "firing again after resolving is a new trigger, window or not")

	deliveries, err := s.AlertDeliveries(ctx, fp)
	require.NoError(t, err)
	require.Len(t, deliveries, 7)
	require.JSONEq(t, string(AlertPayload("resolved")), string(deliveries[5].Payload))
	require.Equal(t, []string{store.AuditAlertFiring, store.AuditAlertFiring, store.AuditAlertResolved, store.AuditAlertFiring},
		AuditKinds(t, s, store.AuditFilter{}))
}

// recordAtOnce delivers a new firing alert from every store in stores,
// perStore times each, all at once, and returns how many deliveries started
// a trigger.
func recordAtOnce(t *testing.T, stores []store.Store, perStore int, fp string, at time.Time) int {
	t.Helper()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		fresh int
	)
	for _, s := range stores {
		for range perStore {
			wg.Go(func() {
				st, err := s.RecordAlert(t.Context(), fp, AlertPayload("firing"), at)
				if err != nil {
					t.Errorf("record: %v", err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				if st.Fresh {
					fresh++
				}
			})
		}
	}
	wg.Wait()
	return fresh
}

// Two deliveries of a new alert arrive at once (Alertmanager retried while
// the first was in flight): exactly one starts a trigger.
func testAlertDedupConcurrentDeliveries(t *testing.T, e *Env) {
	s, c := e.S, e.Clock
	for round := range 10 {
		fp := fmt.Sprintf("fp-%02d", round)
		require.Equal(t, 1, recordAtOnce(t, []store.Store{s}, 4, fp, c.Now()))
		st, err := s.GetAlert(t.Context(), fp)
		require.NoError(t, err)
		require.Equal(t, 3, st.Repeats)
	}
}

// Alertmanager sends the same alert to every replica: one trigger for all.
func testAlertDedupAcrossStores(t *testing.T, e *Env) {
	stores := []store.Store{e.S, e.OpenAs(t, "storetest/replica")}
	for round := range 10 {
		fp := fmt.Sprintf("fp-%02d", round)
		require.Equal(t, 1, recordAtOnce(t, stores, 2, fp, e.Clock.Now()))
		for _, s := range stores {
			st, err := s.GetAlert(t.Context(), fp)
			require.NoError(t, err)
			require.Equal(t, 3, st.Repeats)
			deliveries, err := s.AlertDeliveries(t.Context(), fp)
			require.NoError(t, err)
			require.Len(t, deliveries, 4, "every delivery is kept")
		}
	}
}

// The bot enqueues the trigger's work under the alert's TriggerKey on every
// firing delivery; the queue keeps one item, and the alert shows the run
// once the worker has created it.
func testAlertLinksToItsWorkAndRun(t *testing.T, e *Env) {
	s, c, ctx := e.S, e.Clock, t.Context()
	fp := "a1b2c3d4e5f60718"
	var item store.Work
	for i := range 3 {
		st, err := s.RecordAlert(ctx, fp, AlertPayload("firing"), c.Now())
		require.NoError(t, err)
		w, created, err := s.Enqueue(ctx, store.Work{Key: st.TriggerKey, Trigger: store.TriggerAlert, Runbook: "sglang-pd-wedge",
			Params: map[string]string{"deployment": "dsv4"}, RequestedBy: "alertmanager", Payload: AlertPayload("firing")})
		require.NoError(t, err)
		require.Equal(t, i == 0, created, "delivery %d", i)
		item = w
		c.Advance(time.Minute)
	}
	claimed, err := s.ClaimWork(ctx)
	require.NoError(t, err)
	require.Equal(t, item.ID, claimed.ID)
	run, err := s.CreateRun(ctx, store.Run{Runbook: claimed.Runbook, Trigger: claimed.Trigger, Params: claimed.Params, WorkID: claimed.ID})
	require.NoError(t, err)

	st, err := s.GetAlert(ctx, fp)
	require.NoError(t, err)
	require.Equal(t, run.ID, st.RunID)
	require.Equal(t, 2, st.Repeats)
	w, err := s.GetWork(ctx, claimed.ID)
	require.NoError(t, err)
	require.Equal(t, run.ID, w.RunID, "creating the run links the work to it")

	_, err = s.ClaimWork(ctx)
	require.ErrorIs(t, err, store.ErrNoWork, "three deliveries, one piece of work")

	_, err = s.CreateRun(ctx, store.Run{Runbook: "x", Trigger: store.TriggerAlert, WorkID: "w-missing"})
	require.ErrorIs(t, err, store.ErrNotFound, "a run cannot carry out work that does not exist")
}

func testRecentAlertsWindow(t *testing.T, e *Env) {
	s, c, ctx := e.S, e.Clock, t.Context()
	_, err := s.RecordAlert(ctx, "old", AlertPayload("firing"), c.Now())
	require.NoError(t, err)
	c.Advance(2 * time.Hour)
	since := c.Now().Add(-time.Hour)
	for _, fp := range []string{"new-1", "new-2"} {
		_, err := s.RecordAlert(ctx, fp, AlertPayload("firing"), c.Now())
		require.NoError(t, err)
		c.Advance(time.Second)
	}
	recent, err := s.RecentAlerts(ctx, since)
	require.NoError(t, err)
	var fps []string
	for _, st := range recent {
		fps = append(fps, st.Fingerprint)
	}
	require.Equal(t, []string{"new-2", "new-1"}, fps)

	_, err = s.GetAlert(ctx, "never")
	require.ErrorIs(t, err, store.ErrNotFound)
}

func testRecordAlertValidates(t *testing.T, e *Env) {
	s, c, ctx := e.S, e.Clock, t.Context()
	_, err := s.RecordAlert(ctx, "fp", []byte("not json"), c.Now())
	require.Error(t, err)
	_, err = s.RecordAlert(ctx, "", AlertPayload("firing"), c.Now())
	require.Error(t, err)
	_, err = s.RecordAlert(ctx, "fp", AlertPayload("firing"), time.Time{})
	require.Error(t, err)

	// A resolved notice for an alert never seen firing is kept, but
	// triggers nothing.
	st, err := s.RecordAlert(ctx, "fp", json.RawMessage(`{"status":"resolved"}`), c.Now())
	require.NoError(t, err)
	require.False(t, st.Fresh)
	require.Equal(t, store.AlertResolved, st.Status)
	require.Empty(t, st.TriggerKey)
}

// An alert accepted before a restart is still there after it, deliveries
// and dedup state alike: a repeat delivery after the restart is a repeat.
func testAlertsDurableAcrossReopen(t *testing.T, e *Env) {
	fp := "a1b2c3d4e5f60718"
	first, err := e.S.RecordAlert(t.Context(), fp, AlertPayload("firing"), e.Clock.Now())
	require.NoError(t, err)
	require.True(t, first.Fresh)

	s := e.Reopen(t)
	deliveries, err := s.AlertDeliveries(t.Context(), fp)
	require.NoError(t, err)
	require.Len(t, deliveries, 1)
	require.Equal(t, fp, deliveries[0].Fingerprint)
	require.Equal(t, e.Clock.Now(), deliveries[0].ReceivedAt)
	require.JSONEq(t, string(AlertPayload("firing")), string(deliveries[0].Payload))

	e.Clock.Advance(time.Minute)
	again, err := s.RecordAlert(t.Context(), fp, AlertPayload("firing"), e.Clock.Now())
	require.NoError(t, err)
	require.False(t, again.Fresh)
	require.Equal(t, first.TriggerKey, again.TriggerKey)
	require.Equal(t, 1, again.Repeats)
}
