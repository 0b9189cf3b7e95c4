//go:build e2e

package e2e

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/remote"
	"github.com/runbot/runbot/test/e2e/testhost"
)

// TestFileReadsOverSFTP: on a test host (Debian's sshd, its sftp
// subsystem as shipped), runbot reads files through the connection's SFTP
// session: what it reads is what cat prints, and twenty reads start one
// process on the host (sftp-server), where cat starts a session's worth
// for each.
func TestFileReadsOverSFTP(t *testing.T) {
	c := testhost.Up(t, 1)
	h := c.Hosts[0]
	s := sshTo(t, c, h)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	script := "/root/serve_dsv4_decode.sh"

	c.Step(t, h, "a file read over SFTP is what cat prints, with its modification time")
	f, err := remote.ReadFile(ctx, s, remote.FileRead{Path: script, ModTime: true})
	require.NoError(t, err)
	require.Empty(t, s.FilesRefused(), "sshd offers sftp")
	require.Equal(t, h.Run(t, "cat "+script), string(f.Data))
	mtime, err := strconv.ParseInt(strings.TrimSpace(h.Run(t, "stat -c %Y "+script)), 10, 64)
	require.NoError(t, err)
	require.Equal(t, time.Unix(mtime, 0).UTC(), f.ModTime)
	var fe *remote.FileError
	_, err = remote.ReadFile(ctx, s, remote.FileRead{Path: "/root/no-such-script.sh"})
	require.ErrorAs(t, err, &fe)
	require.Equal(t, "no such file", fe.Reason)

	c.Step(t, h, "twenty reads over SFTP start no process on the host")
	lastPID := func() int { return newestPID(t, h) }
	before := lastPID()
	for range 20 {
		_, err := remote.ReadFile(ctx, s, remote.FileRead{Path: "/proc/loadavg"})
		require.NoError(t, err)
	}
	sftp := lastPID() - before
	before = lastPID()
	for range 20 {
		_, err := s.Run(ctx, remote.Command{Line: "cat /proc/loadavg"})
		require.NoError(t, err)
	}
	cat := lastPID() - before
	t.Logf("pids started by 20 reads: %d over sftp, %d with cat", sftp, cat)
	// The reading itself (a cat over the test's own connection) is in
	// both counts.
	require.LessOrEqual(t, sftp, 2, "SFTP reads start no process each")
	// A session's login shell execs cat, a line of literal words, in its
	// own process: one pid per read.
	require.GreaterOrEqual(t, cat, 20, "each cat starts at least the session's process")
}
