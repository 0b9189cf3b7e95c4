package actions

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/argspec"
	"github.com/runbot/runbot/internal/target"
	"github.com/runbot/runbot/remote"
)

// localEnv is an Env whose target is this machine, reached through the
// real local runner, with a clock that moves one second per reading so
// that backups made in one test get distinct names.
func localEnv(args argspec.Values) Env {
	var mu sync.Mutex
	now := time.Date(2026, 6, 18, 21, 5, 0, 0, time.UTC)
	return Env{
		Target: target.Target{
			Deployment: "dsv4", Role: "decode", Host: "test-host",
			Runner: &remote.Local{Name: "test-host"},
			Unit:   "sglang-dsv4-decode.service",
		},
		Args: args,
		Now: func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			now = now.Add(time.Second)
			return now
		},
	}
}

// copyFixture copies a file under testdata into dir with the given mode and
// returns its path.
func copyFixture(t *testing.T, fixture, dir, name string, mode os.FileMode) string {
	t.Helper()
	b, err := os.ReadFile(fixturePath(fixture))
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, b, mode))
	require.NoError(t, os.Chmod(p, mode)) // the umask may have trimmed it
	return p
}

// fixturePath finds a fixture: the SGLang ones ("sglang/…") are the
// repository's shared copies, which checks and sim read too; the others
// are this package's own.
func fixturePath(name string) string {
	if strings.HasPrefix(name, "sglang/") {
		return filepath.Join("..", "testdata", name)
	}
	return filepath.Join("testdata", name)
}
