package sshrun_test

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
	"github.com/runbot/runbot/remote/sshrun"
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

// TestReadFileOverSFTPAsksForWholeChunks: reads ask for 32 KiB at a time,
// so a small file takes a request for its bytes and one that finds the
// end, where io.ReadAll's 512-byte start took one request per 512 bytes,
// each a round trip. /proc files, which stat says are empty, read the same.
// OpenSSH's sftp-server logs each request it serves (-l DEBUG1), which is
// what is counted.
func TestReadFileOverSFTPAsksForWholeChunks(t *testing.T) { //nolint:tparallel // the cases share one sshd and read its sftp log, in order
	t.Parallel()
	dir := t.TempDir()
	log := filepath.Join(dir, "sftp.log")
	srv := sshdtest.Start(t, sshdtest.Options{Config: []string{
		"Subsystem sftp /usr/lib/openssh/sftp-server -e -l DEBUG1 2>>" + log,
	}})
	s := newSSH(t, hostConfig(t, srv))
	ctx := testCtx(t)
	write := func(name string, size int) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(strings.Repeat("x", size-1)+"\n"), 0o644))
		return path
	}
	for _, tc := range []struct {
		name  string
		path  string
		max   int
		size  int
		reads int
	}{
		{name: "4 KiB script", path: write("serve.sh", 4<<10), size: 4 << 10, reads: 2},
		{name: "100 KiB: four chunks and the end", path: write("big.conf", 100<<10), size: 100 << 10, reads: 5},
		{name: "exactly one chunk", path: write("one.conf", 32<<10), size: 32 << 10, reads: 2},
		{name: "cut at max", path: write("cut.conf", 100<<10), max: 40 << 10, size: 40 << 10, reads: 2},
		{name: "proc file read to EOF", path: "/proc/self/status", reads: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := countSFTPReads(t, log)
			f, err := remote.ReadFile(ctx, s, remote.FileRead{Path: tc.path, Max: tc.max})
			require.NoError(t, err)
			require.Empty(t, s.FilesRefused())
			if tc.size > 0 {
				require.Len(t, f.Data, tc.size)
				require.Equal(t, tc.max > 0, f.Truncated)
			} else {
				require.Contains(t, string(f.Data), "Name:\tsftp-server", "the server's own /proc/self")
			}
			require.Equal(t, tc.reads, countSFTPReads(t, log)-before, "read requests for %s", tc.path)
		})
	}
}

// countSFTPReads counts the read requests in sftp-server's debug log.
func countSFTPReads(t *testing.T, log string) int {
	t.Helper()
	b, err := os.ReadFile(log)
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	require.NoError(t, err)
	return strings.Count(string(b), ": read \"")
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
	sh := sshrun.NewShell(s)
	t.Cleanup(func() { _ = sh.Close() })
	f, err := remote.ReadFile(testCtx(t), sh, remote.FileRead{Path: "/proc/loadavg"})
	require.NoError(t, err)
	require.NotEmpty(t, f.Data)
	var fr remote.FileReader = sh
	_, err = fr.ReadFile(testCtx(t), "/nonexistent/x", 10)
	require.ErrorAs(t, err, new(*remote.FileError), "got %v", err)
}
