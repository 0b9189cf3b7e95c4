package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/heartbeat"
)

func TestReadyzReflectsLoopProgress(t *testing.T) {
	now := time.Date(2026, 6, 18, 20, 38, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	live, ready := heartbeat.New(clock), heartbeat.New(clock)
	live.Register("housekeeping", time.Minute)
	ready.Register("scheduler", 30*time.Second)
	h := healthHandlers{live: live, ready: ready}
	get := func(handler http.HandlerFunc) (int, string) {
		rec := httptest.NewRecorder()
		handler(rec, httptest.NewRequest("GET", "/", nil))
		return rec.Code, rec.Body.String()
	}

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

// TestServeSpeaksSdNotify runs `runbot serve` with NOTIFY_SOCKET pointing
// at a real unix datagram socket, as systemd does for Type=notify, and
// checks READY=1 comes only once /readyz is green, WATCHDOG=1 follows, and
// SIGTERM yields STOPPING=1 and a clean exit.
func TestServeSpeaksSdNotify(t *testing.T) {
	runbot, _ := buildBinaries(t)
	dir := t.TempDir()
	sock := filepath.Join(dir, "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	require.NoError(t, err)
	defer func() { _ = conn.Close() }() // test cleanup

	port := freePort(t)
	cfg := filepath.Join(dir, "runbot.yaml")
	require.NoError(t, os.WriteFile(cfg, fmt.Appendf(nil, "listen: 127.0.0.1:%d\nstore: %s\nshutdown_grace: 5s\n", port, filepath.Join(dir, "runbot.db")), 0o600))
	cmd := exec.Command(runbot, "serve", "--config", cfg)
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+sock, "WATCHDOG_USEC=400000")
	logs := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill() }()

	msgs := notifications(conn)
	next := func(what string) string {
		select {
		case m := <-msgs:
			return m
		case <-time.After(20 * time.Second):
			t.Fatalf("no %s notification; runbot said:\n%s", what, logs.String())
		}
		return ""
	}
	ready := next("READY")
	require.True(t, strings.HasPrefix(ready, "READY=1"), ready)
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", port))
	require.NoError(t, err)
	_ = resp.Body.Close() // only the status matters
	require.Equal(t, 200, resp.StatusCode, "READY=1 is sent only when /readyz is green")
	require.Equal(t, "WATCHDOG=1", next("WATCHDOG"))

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	for m := next("STOPPING"); m != "STOPPING=1"; m = next("STOPPING") {
		require.Equal(t, "WATCHDOG=1", m)
	}
	require.NoError(t, cmd.Wait(), logs.String())
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { _ = l.Close() }() // only the port was wanted
	return l.Addr().(*net.TCPAddr).Port
}

// notifications delivers each datagram sent to conn (sd_notify's
// messages) until conn is closed, when the channel is closed too.
func notifications(conn *net.UnixConn) <-chan string {
	msgs := make(chan string, 64)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				close(msgs)
				return
			}
			msgs <- string(buf[:n])
		}
	}()
	return msgs
}
