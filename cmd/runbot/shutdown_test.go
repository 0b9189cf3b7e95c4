package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/slackchat/slackrec"
	"github.com/runbot/runbot/store"
)

// TestSIGTERMMidRunLeavesAConsistentStore: runbot serve is stopped while a
// scheduled run is in flight; after it exits, no run is left "running" and
// the store opens cleanly.
func TestSIGTERMMidRunLeavesAConsistentStore(t *testing.T) {
	runbot, _ := buildBinaries(t)
	rec := slackrec.New()
	t.Cleanup(rec.Close)
	dir := t.TempDir()
	db := filepath.Join(dir, "runbot.db")
	abs, err := filepath.Abs("testdata")
	require.NoError(t, err)
	port := freePort(t)
	cfg := fmt.Sprintf(`
listen: 127.0.0.1:%d
store: %s
inventory: %s/local.yaml
runbooks: [%s/slowrunbooks]
shutdown_grace: 2s
slack:
  mode: http
  bot_token: {env: T_BOT}
  signing_secret: {env: T_SIGN}
  channel: C0OPS
  api_url: %s
schedules:
  - {runbook: slow-check, cron: "@every 1s", post: always}
`, port, db, abs, abs, rec.APIURL())
	path := filepath.Join(dir, "runbot.yaml")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o600))
	cmd := exec.Command(runbot, "serve", "--config", path)
	cmd.Env = append(os.Environ(), "T_BOT=xoxb-test", "T_SIGN=secret")
	logs := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill() }()

	// Wait for a scheduled run to be in flight.
	deadline := time.Now().Add(30 * time.Second)
	for running(t, db) == 0 {
		require.True(t, time.Now().Before(deadline), "no scheduled run started:\n%s", logs.String())
		time.Sleep(100 * time.Millisecond)
	}
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", port))
	require.NoError(t, err)
	_ = resp.Body.Close() // the request only proves HTTP still answers

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		require.NoError(t, err, logs.String())
	case <-time.After(20 * time.Second):
		t.Fatalf("runbot did not stop within its grace period:\n%s", logs.String())
	}
	require.Zero(t, running(t, db), "no run is left running after a graceful stop:\n%s", logs.String())
}

// running counts runs in state running, reading the store as another
// process would.
func running(t *testing.T, db string) int {
	t.Helper()
	if _, err := os.Stat(db); err != nil {
		return 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := store.Open(ctx, db)
	require.NoError(t, err)
	defer func() { _ = st.Close() }() // a read-only look; nothing to lose on close
	runs, err := st.ListRuns(ctx, store.RunFilter{Status: store.RunRunning})
	require.NoError(t, err)
	return len(runs)
}
