package store_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/store"
)

func alertPayload(status string) []byte {
	return fmt.Appendf(nil, `{"status":%q,"labels":{"alertname":"SGLangRequestsHanging","deployment":"dsv4"},
		"startsAt":"2026-11-29T08:29:00Z","endsAt":"0001-01-01T00:00:00Z","fingerprint":"a1b2c3d4e5f60718"}`, status)
}

// Alertmanager re-sends a firing alert on every group_interval tick and
// retries failed deliveries; one trigger covers them all within the window.
func TestAlertDedup(t *testing.T) {
	s, c := openTest(t) // one hour dedup window
	ctx := testCtx(t)
	fp := "a1b2c3d4e5f60718"
	record := func(status string) store.AlertState {
		st, err := s.RecordAlert(ctx, fp, alertPayload(status), c.Now())
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
	require.JSONEq(t, string(alertPayload("resolved")), string(deliveries[5].Payload))
	require.Equal(t, []string{store.AuditAlertFiring, store.AuditAlertFiring, store.AuditAlertResolved, store.AuditAlertFiring},
		auditKinds(t, s, store.AuditFilter{}))
}

// Two deliveries of a new alert arrive at once (Alertmanager retried while
// the first was in flight): exactly one starts a trigger.
func TestAlertDedupConcurrentDeliveries(t *testing.T) {
	s, c := openTest(t)
	for round := range 10 {
		fp := fmt.Sprintf("fp-%02d", round)
		var (
			wg    sync.WaitGroup
			mu    sync.Mutex
			fresh int
		)
		for range 4 {
			wg.Go(func() {
				st, err := s.RecordAlert(testCtx(t), fp, alertPayload("firing"), c.Now())
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
		wg.Wait()
		require.Equal(t, 1, fresh)
		st, err := s.GetAlert(testCtx(t), fp)
		require.NoError(t, err)
		require.Equal(t, 3, st.Repeats)
	}
}

// The bot enqueues the trigger's work under the alert's TriggerKey on every
// firing delivery; the queue keeps one item, and the alert shows the run
// once the worker has created it.
func TestAlertLinksToItsWorkAndRun(t *testing.T) {
	s, c := openTest(t)
	ctx := testCtx(t)
	fp := "a1b2c3d4e5f60718"
	var item store.Work
	for i := range 3 {
		st, err := s.RecordAlert(ctx, fp, alertPayload("firing"), c.Now())
		require.NoError(t, err)
		w, created, err := s.Enqueue(ctx, store.Work{Key: st.TriggerKey, Trigger: store.TriggerAlert, Runbook: "sglang-pd-wedge",
			Params: map[string]string{"deployment": "dsv4"}, RequestedBy: "alertmanager", Payload: alertPayload("firing")})
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

	_, err = s.ClaimWork(ctx)
	require.ErrorIs(t, err, store.ErrNoWork, "three deliveries, one piece of work")
}

func TestRecentAlertsWindow(t *testing.T) {
	s, c := openTest(t)
	ctx := testCtx(t)
	_, err := s.RecordAlert(ctx, "old", alertPayload("firing"), c.Now())
	require.NoError(t, err)
	c.Advance(2 * time.Hour)
	since := c.Now().Add(-time.Hour)
	for _, fp := range []string{"new-1", "new-2"} {
		_, err := s.RecordAlert(ctx, fp, alertPayload("firing"), c.Now())
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

func TestRecordAlertValidates(t *testing.T) {
	s, c := openTest(t)
	ctx := testCtx(t)
	_, err := s.RecordAlert(ctx, "fp", []byte("not json"), c.Now())
	require.Error(t, err)
	_, err = s.RecordAlert(ctx, "", alertPayload("firing"), c.Now())
	require.Error(t, err)
	_, err = s.RecordAlert(ctx, "fp", alertPayload("firing"), time.Time{})
	require.Error(t, err)

	// A resolved notice for an alert never seen firing is kept, but
	// triggers nothing.
	st, err := s.RecordAlert(ctx, "fp", json.RawMessage(`{"status":"resolved"}`), c.Now())
	require.NoError(t, err)
	require.False(t, st.Fresh)
	require.Equal(t, store.AlertResolved, st.Status)
	require.Empty(t, st.TriggerKey)
}
