package main

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestServeOpensTheStoreFromASecretReference: `store: {env: NAME}` (the
// form a PostgreSQL DSN with a password takes) is what serve opens; here
// the reference holds a SQLite URL, so the test needs no database server,
// and the file appears where the secret says, not where the config is.
func TestServeOpensTheStoreFromASecretReference(t *testing.T) {
	runbot, _ := buildBinaries(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "from-secret", "runbot.db")
	port := freePort(t)
	cfg := filepath.Join(dir, "runbot.yaml")
	require.NoError(t, os.WriteFile(cfg, fmt.Appendf(nil, "listen: 127.0.0.1:%d\nstore: {env: RUNBOT_TEST_STORE}\nshutdown_grace: 5s\n", port), 0o600))
	cmd := exec.Command(runbot, "serve", "--config", cfg)
	cmd.Env = append(os.Environ(), "RUNBOT_TEST_STORE=sqlite://"+db)
	logs := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill() }()

	require.Eventually(t, func() bool {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", port))
		if err != nil {
			return false
		}
		_ = resp.Body.Close() // only the status matters
		return resp.StatusCode == http.StatusOK
	}, 30*time.Second, 100*time.Millisecond, "serve never became ready:\n%s", logs.String())
	require.FileExists(t, db)
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, cmd.Wait(), logs.String())
}
