package remote_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/sshdtest"
	"github.com/runbot/runbot/remote"
)

// sftpSubsystem is Debian's sftp server, which openssh-server brings.
const sftpSubsystem = "Subsystem sftp /usr/lib/openssh/sftp-server"

// TestReadFile: a file reads the same over SFTP and, where sshd offers no
// SFTP, with cat: its bytes, its modification time, the cap, and a file
// that cannot be read as a *FileError naming why. Real sshd either way.
func TestReadFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := filepath.Join(dir, "serve.sh")
	body := "#!/bin/sh\nexec sglang --disable-overlap-schedule \\\n  --port 30200\n\x00binary tail\n"
	require.NoError(t, os.WriteFile(script, []byte(body), 0o644))
	mtime := time.Date(2026, 6, 18, 9, 41, 7, 0, time.UTC)
	require.NoError(t, os.Chtimes(script, mtime, mtime))
	unreadable := filepath.Join(dir, "secret.conf")
	require.NoError(t, os.WriteFile(unreadable, []byte("token=x\n"), 0o000))

	for _, tc := range []struct {
		name   string
		config []string
		sftp   bool
	}{
		{"over sftp", []string{sftpSubsystem}, true},
		{"sshd without sftp: cat", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := sshdtest.Start(t, sshdtest.Options{Config: tc.config})
			s := newSSH(t, hostConfig(t, srv))
			ctx := testCtx(t)

			f, err := remote.ReadFile(ctx, s, remote.FileRead{Path: script, ModTime: true})
			require.NoError(t, err)
			require.Equal(t, body, string(f.Data))
			require.False(t, f.Truncated)
			require.True(t, mtime.Equal(f.ModTime), "modified %s, want %s", f.ModTime, mtime)
			if tc.sftp {
				require.Empty(t, s.FilesRefused())
			} else {
				require.Contains(t, s.FilesRefused(), "sftp on web1")
			}

			f, err = remote.ReadFile(ctx, s, remote.FileRead{Path: script, Max: 10})
			require.NoError(t, err)
			require.Equal(t, body[:10], string(f.Data))
			require.True(t, f.Truncated)

			f, err = remote.ReadFile(ctx, s, remote.FileRead{Path: "/proc/loadavg"})
			require.NoError(t, err)
			require.Len(t, strings.Fields(string(f.Data)), 5, "a /proc file, which says it is empty, reads whole: %q", f.Data)

			var fe *remote.FileError
			_, err = remote.ReadFile(ctx, s, remote.FileRead{Path: filepath.Join(dir, "missing.conf")})
			require.ErrorAs(t, err, &fe)
			require.Equal(t, "web1", fe.Host)
			require.Contains(t, strings.ToLower(fe.Reason), "no such file")

			if os.Geteuid() != 0 {
				_, err = remote.ReadFile(ctx, s, remote.FileRead{Path: unreadable})
				require.ErrorAs(t, err, &fe)
				require.Contains(t, strings.ToLower(fe.Reason), "permission denied")
			}

			// The SSH runner is reused for the next read: still one
			// connection.
			require.Equal(t, 1, s.Dials())
		})
	}
}

// TestReadFileOverSFTPDoesNotBlockOnAFIFO: sftp-server cannot be killed
// the way a command is, so a file that could block it is not opened: a
// FIFO is refused at once as not a regular file, and the next read works.
func TestReadFileOverSFTPDoesNotBlockOnAFIFO(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	plain := filepath.Join(dir, "plain")
	require.NoError(t, os.WriteFile(plain, []byte("ok\n"), 0o644))
	srv := sshdtest.Start(t, sshdtest.Options{Config: []string{sftpSubsystem}})
	s := newSSH(t, hostConfig(t, srv))

	ctx, cancel := context.WithTimeout(testCtx(t), 20*time.Second)
	defer cancel()
	var fe *remote.FileError
	_, err := s.ReadFile(ctx, fifo, 1024)
	require.ErrorAs(t, err, &fe)
	require.Contains(t, fe.Reason, "not a regular file")
	_, err = s.ReadFile(ctx, dir, 1024)
	require.ErrorAs(t, err, &fe, "a directory is not read either")
	f, err := s.ReadFile(ctx, plain, 1024)
	require.NoError(t, err)
	require.Equal(t, "ok\n", string(f.Data))
	require.Empty(t, s.FilesRefused())
}

// TestShellReadsFilesOverSFTP: the multiplexed shell reads files through
// its SSH runner's SFTP session, not as jobs.
func TestShellReadsFilesOverSFTP(t *testing.T) {
	t.Parallel()
	srv := sshdtest.Start(t, sshdtest.Options{Config: []string{sftpSubsystem}})
	s := newSSH(t, hostConfig(t, srv))
	sh := remote.NewShell(s)
	t.Cleanup(func() { _ = sh.Close() })
	f, err := remote.ReadFile(testCtx(t), sh, remote.FileRead{Path: "/proc/loadavg"})
	require.NoError(t, err)
	require.NotEmpty(t, f.Data)
	var fr remote.FileReader = sh
	_, err = fr.ReadFile(testCtx(t), "/nonexistent/x", 10)
	require.True(t, errors.As(err, new(*remote.FileError)), "got %v", err)
}
