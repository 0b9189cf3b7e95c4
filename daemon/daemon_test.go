package daemon

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/runbot/runbot/internal/heartbeat"
	"github.com/stretchr/testify/require"
)

// get serves one GET with a health handler: its status and body.
func get(handler http.HandlerFunc) (int, string) {
	rec := httptest.NewRecorder()
	handler(rec, httptest.NewRequest("GET", "/", nil))
	return rec.Code, rec.Body.String()
}

func TestReadyzReflectsLoopProgress(t *testing.T) {
	now := time.Date(2026, 6, 18, 20, 38, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	live, ready := heartbeat.New(clock), heartbeat.New(clock)
	live.Register("housekeeping", time.Minute)
	ready.Register("scheduler", 30*time.Second)
	h := healthHandlers{live: live, ready: ready}

	// Before the readiness loop has succeeded once, not ready: READY=1
	// waits for the same.
	code, body := get(h.readyz)
	require.Equal(t, 503, code)
	require.Contains(t, body, "starting: not every readiness check has succeeded yet")
	ready.Beat("scheduler")
	code, _ = get(h.readyz)
	require.Equal(t, 200, code)

	// The scheduler loop is blocked: it stops beating, HTTP still answers.
	now = now.Add(45 * time.Second)
	live.Beat("housekeeping")
	code, body = get(h.readyz)
	require.Equal(t, 503, code)
	require.Contains(t, body, "scheduler has made no progress for 45s (limit 30s)")
	code, _ = get(h.healthz)
	require.Equal(t, 200, code, "liveness is about the liveness loops only")

	// It unblocks and beats again: ready again.
	ready.Beat("scheduler")
	code, _ = get(h.readyz)
	require.Equal(t, 200, code)
}

// /healthz is liveness: a housekeeping loop that keeps failing against a
// store that is down for ten minutes fails /readyz, with the reason, but
// not /healthz; only a loop that stops going round fails it.
func TestHealthzFailsOnlyForALoopThatStoppedGoingRound(t *testing.T) {
	now := time.Date(2026, 6, 18, 20, 38, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	live, ready := heartbeat.New(clock), heartbeat.New(clock)
	live.Register("housekeeping", time.Minute)
	ready.Register("store", 30*time.Second)
	ready.Beat("store")
	h := healthHandlers{live: live, ready: ready}

	down := errors.New("dial tcp 10.0.0.5:5432: connect: connection refused")
	for range 20 {
		now = now.Add(30 * time.Second)
		live.Fail("housekeeping", down)
		ready.Fail("store", down)
		code, body := get(h.readyz)
		require.Equal(t, 503, code)
		require.Contains(t, body, "housekeeping is down: "+down.Error())
		code, body = get(h.healthz)
		require.Equal(t, 200, code, "after %s of a store outage: %s", 20*30*time.Second, body)
	}

	// The loop stops going round: no attempt for over its minute.
	now = now.Add(61 * time.Second)
	code, body := get(h.healthz)
	require.Equal(t, 503, code)
	require.Contains(t, body, "housekeeping has made no progress for 1m1s (limit 1m0s)")
}

// TestWatchdogPingsOnlyWhileLoopsProgress: with a loop stuck, systemd gets
// no WATCHDOG=1 and will restart the bot; when it recovers, pings resume.
func TestWatchdogPingsOnlyWhileLoopsProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mon := heartbeat.New(nil)
		mon.Register("scheduler", 10*time.Second)
		var mu sync.Mutex
		pings := 0
		notify := func(state string) error {
			mu.Lock()
			defer mu.Unlock()
			require.Equal(t, "WATCHDOG=1", state)
			pings++
			return nil
		}
		count := func() int { mu.Lock(); defer mu.Unlock(); return pings }
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		go watchdog(ctx, 5*time.Second, mon, notify, slog.New(slog.NewTextHandler(io.Discard, nil)))

		// Healthy: a ping every 5 s while the loop beats.
		for range 4 {
			time.Sleep(5 * time.Second)
			mon.Beat("scheduler")
			synctest.Wait()
		}
		require.Equal(t, 4, count())

		// Stuck: no beats for 30 s; pings stop once the gap passes 10 s.
		time.Sleep(30 * time.Second)
		synctest.Wait()
		stuckPings := count() - 4
		require.LessOrEqual(t, stuckPings, 2, "at most the pings before the gap passed the limit")

		// Recovered.
		mon.Beat("scheduler")
		time.Sleep(5 * time.Second)
		synctest.Wait()
		require.Equal(t, 4+stuckPings+1, count())
	})
}

// TestWatchdogKeepsPingingWhileADependencyIsDown: the store probe fails
// for ten minutes (PostgreSQL unreachable) and the loop goes on probing;
// systemd keeps getting WATCHDOG=1, since a restart would not bring the
// store back and would drop the runs and messages held meanwhile. /readyz
// is what says the store is down.
func TestWatchdogKeepsPingingWhileADependencyIsDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ready := heartbeat.New(nil)
		ready.Register("store", 12*time.Second)
		var mu sync.Mutex
		pings := 0
		notify := func(string) error { mu.Lock(); defer mu.Unlock(); pings++; return nil }
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		go watchdog(ctx, 30*time.Second, ready, notify, slog.New(slog.NewTextHandler(io.Discard, nil)))
		for range 120 {
			time.Sleep(5 * time.Second)
			ready.Fail("store", errors.New("probe store: no answer within 2s"))
		}
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		require.Equal(t, 20, pings, "a ping every 30 s through the ten minutes")
		require.NotEmpty(t, ready.Check(), "readiness says the store is down")
	})
}
