package daemon_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/daemon"
	"github.com/runbot/runbot/preflight"
	"github.com/runbot/runbot/store"
)

// notes records what Run tells systemd.
type notes struct {
	mu  sync.Mutex
	got []string
}

func (n *notes) notify(state string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.got = append(n.got, state)
	return nil
}

func (n *notes) all() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.got...)
}

// TestRunWithoutTheCommandLine: the daemon is a function. Given a checked
// config it opens the store, serves /readyz and /metrics, says READY=1
// only once ready, and shuts down in order when its context ends.
func TestRunWithoutTheCommandLine(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "runbot.yaml")
	db := filepath.Join(dir, "state", "runbot.db")
	require.NoError(t, os.WriteFile(cfgPath, fmt.Appendf(nil, "listen: %s\nstore: %s\nshutdown_grace: 5s\n", addr, db), 0o600))
	plan, problems, err := preflight.Load(cfgPath, nil, preflight.Overrides{})
	require.NoError(t, err)
	require.NoError(t, problems.Err())

	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	var n notes
	done := make(chan error, 1)
	go func() { done <- daemon.Run(ctx, plan, n.notify) }()

	require.Eventually(t, func() bool {
		for _, s := range n.all() {
			if strings.HasPrefix(s, "READY=1") {
				return true
			}
		}
		return false
	}, 30*time.Second, 20*time.Millisecond, "no READY=1")
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }() // read below
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body)
	}
	code, body := get("/readyz")
	require.Equal(t, http.StatusOK, code, body)
	code, body = get("/metrics")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "runbot_config_reload_success 1")
	require.Contains(t, body, `runbot_dependency_up{dependency="store"} 1`)
	info, err := os.Stat(db)
	require.NoError(t, err, "the store is opened where the config says, its directory created")
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	stop()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	require.Equal(t, "STOPPING=1", n.all()[len(n.all())-1])
	_, err = http.Get("http://" + addr + "/readyz")
	require.Error(t, err, "the listener is closed")
}

// A serve whose address is taken (a second copy, another service) stops
// with that one error before it touches anything: the store it names is
// not created, so nothing was recovered, resumed or started.
func TestRunWithABusyPortStartsNothing(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = busy.Close() })
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "runbot.yaml")
	db := filepath.Join(dir, "state", "runbot.db")
	require.NoError(t, os.WriteFile(cfgPath, fmt.Appendf(nil, "listen: %s\nstore: %s\n", busy.Addr(), db), 0o600))
	plan, problems, err := preflight.Load(cfgPath, nil, preflight.Overrides{})
	require.NoError(t, err)
	require.NoError(t, problems.Err())

	var n notes
	err = daemon.Run(t.Context(), plan, n.notify)
	require.ErrorContains(t, err, "listen on "+busy.Addr().String()+": ")
	require.ErrorContains(t, err, "address already in use")
	require.NoDirExists(t, filepath.Dir(db), "the store was not opened")
	require.Empty(t, n.all(), "nothing was said to systemd")
}

// WithHostClockOffset reaches the store serve opens: on SQLite, which
// keeps the host's clock, the replica's lease is renewed at the shifted
// time. (On PostgreSQL the store corrects it to the database's clock:
// store.TestClockSkewHostClockOffset.)
func TestRunWithHostClockOffset(t *testing.T) {
	for _, tc := range []struct {
		name string
		skew time.Duration
	}{
		{"30s fast", 30 * time.Second},
		{"30s slow", -30 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			addr := ln.Addr().String()
			require.NoError(t, ln.Close())
			dir := t.TempDir()
			cfgPath := filepath.Join(dir, "runbot.yaml")
			db := filepath.Join(dir, "runbot.db")
			require.NoError(t, os.WriteFile(cfgPath, fmt.Appendf(nil, "listen: %s\nstore: %s\nshutdown_grace: 5s\n", addr, db), 0o600))
			plan, problems, err := preflight.Load(cfgPath, nil, preflight.Overrides{})
			require.NoError(t, err)
			require.NoError(t, problems.Err())

			ctx, stop := context.WithCancel(t.Context())
			defer stop()
			var n notes
			done := make(chan error, 1)
			start := time.Now()
			go func() { done <- daemon.Run(ctx, plan, n.notify, daemon.WithHostClockOffset(tc.skew)) }()
			require.Eventually(t, func() bool {
				for _, s := range n.all() {
					if strings.HasPrefix(s, "READY=1") {
						return true
					}
				}
				return false
			}, 30*time.Second, 20*time.Millisecond, "no READY=1")
			end := time.Now()

			st, err := store.Open(t.Context(), db)
			require.NoError(t, err)
			defer func() { _ = st.Close() }() // read only
			replicas, err := st.ListReplicas(t.Context())
			require.NoError(t, err)
			require.Len(t, replicas, 1)
			require.WithinRange(t, replicas[0].Since, start.Add(tc.skew).UTC().Truncate(time.Second), end.Add(tc.skew).UTC().Add(time.Second),
				"the lease was registered on the shifted clock")

			stop()
			select {
			case err := <-done:
				require.NoError(t, err)
			case <-time.After(30 * time.Second):
				t.Fatal("Run did not return after its context ended")
			}
		})
	}
}
