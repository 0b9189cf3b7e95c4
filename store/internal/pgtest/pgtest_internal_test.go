package pgtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// Without the server's binaries, Start says which package to install.
func TestStartNamesThePackageWhenMissing(t *testing.T) {
	old := initdbGlob
	initdbGlob = filepath.Join(t.TempDir(), "*", "bin", "initdb")
	t.Cleanup(func() { initdbGlob = old })
	_, err := Start()
	require.ErrorIs(t, err, ErrNotInstalled)
	require.ErrorContains(t, err, "apt-get install postgresql")
}

// A cluster starts, serves a database through its socket only, and leaves
// nothing behind when stopped.
func TestClusterStartsAndLeavesNothing(t *testing.T) {
	c, err := Start()
	require.NoError(t, err)
	var listen string
	require.NoError(t, c.admin.QueryRowContext(t.Context(), `SHOW listen_addresses`).Scan(&listen))
	require.Empty(t, listen, "no TCP listener")
	var user string
	require.NoError(t, c.admin.QueryRowContext(t.Context(), `SELECT current_user`).Scan(&user))
	require.Equal(t, superuser, user)
	dir := c.dir
	require.NoError(t, c.Stop())
	require.NoDirExists(t, dir)
}

const childEnv = "PGTEST_CHILD_DIES"

// The test binary is SIGKILLed with its cluster running: nothing it could
// defer runs, and still the watchdog stops the server and removes its
// directory. The child's stderr reaches EOF only once the watchdog, which
// holds it, has exited, so the check needs no waiting.
func TestClusterGoesAwayWhenTheBinaryIsKilled(t *testing.T) {
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, string(out))
	dir, ok := strings.CutPrefix(strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0]), "cluster ")
	require.True(t, ok, "the child names its cluster first: %s", out)
	require.DirExists(t, filepath.Dir(dir))
	require.NoDirExists(t, dir, "the killed binary's cluster directory is removed")
	pids, _ := exec.CommandContext(t.Context(), "pgrep", "-f", "postgres -D "+dir).Output()
	require.Empty(t, strings.TrimSpace(string(pids)), "no server of the killed binary runs")
}

// TestMain runs, in the child the test above starts, the child's part
// instead of the tests: start a cluster, name it, and die by SIGKILL.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "1" {
		os.Exit(m.Run())
	}
	c, err := Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "start cluster:", err)
		os.Exit(3)
	}
	fmt.Printf("cluster %s\n", c.dir)
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL) // the point: nothing after this runs
	select {}
}
