package sshrun_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/shell"
	"github.com/runbot/runbot/internal/sshdtest"
	"github.com/runbot/runbot/remote"
	"github.com/runbot/runbot/remote/sshrun"
)

// newShell returns a multiplexed shell closed when the test ends.
func newShell(t *testing.T, s *sshrun.Runner) *sshrun.Shell {
	t.Helper()
	sh := sshrun.NewShell(s)
	t.Cleanup(func() { _ = sh.Close() }) // Shell.Close reports nothing
	return sh
}

// sessions counts the sessions sshd started, from its own log (LogLevel
// VERBOSE logs one "Starting session" line per session).
func sessions(srv *sshdtest.Server) int {
	return strings.Count(srv.Log(), "Starting session:")
}

func TestShellRun(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{})
	sh := newShell(t, newSSH(t, hostConfig(t, srv)))
	cases := []struct {
		name           string
		cmd            remote.Command
		stdout, stderr string
		exit           int
	}{
		{name: "streams apart", cmd: remote.Command{Line: "echo out; echo err >&2"}, stdout: "out\n", stderr: "err\n"},
		{name: "exit status", cmd: remote.Command{Line: "echo partial; exit 3"}, stdout: "partial\n", exit: 3},
		{name: "no stdin reads eof", cmd: remote.Command{Line: "cat; echo done"}, stdout: "done\n"},
		{name: "killed by TERM", cmd: remote.Command{Line: "kill -TERM $$"}, exit: 128 + 15},
		{name: "killed by KILL", cmd: remote.Command{Line: "echo before; kill -KILL $$"}, stdout: "before\n", exit: 128 + 9},
		{name: "posix shell", cmd: remote.Command{Line: `x=1; [ "$x" = 1 ] && printf '%s %s\n' "$0" "$#"`}, stdout: "/bin/sh 0\n"},
		{name: "no output", cmd: remote.Command{Line: "true"}},
		{name: "no trailing newline", cmd: remote.Command{Line: "printf abc; printf def >&2"}, stdout: "abc", stderr: "def"},
		{name: "frame words in output", cmd: remote.Command{Line: `printf 'out 1 0\nerr\nend 1\n'; printf 'fin 1\nfin 2\nerr\n' >&2`},
			stdout: "out 1 0\nerr\nend 1\n", stderr: "fin 1\nfin 2\nerr\n"},
		// These end without the driver's EXIT trap; the driver's poll finds
		// them.
		{name: "own exit trap", cmd: remote.Command{Line: "trap 'echo bye' EXIT; exit 4"}, stdout: "bye\n", exit: 4},
		{name: "exec", cmd: remote.Command{Line: "exec sh -c 'echo replaced; exit 5'"}, stdout: "replaced\n", exit: 5},
		{name: "multi-line command", cmd: remote.Command{Line: "echo one\necho two\n\n"}, stdout: "one\ntwo\n"},
		{name: "binary output", cmd: remote.Command{Line: `printf '\000\377\n\r'`}, stdout: "\x00\xff\n\r"},
		{name: "home directory", cmd: remote.Command{Line: `[ "$PWD" = "$HOME" ] && echo home`}, stdout: "home\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := sh.Run(testCtx(t), tc.cmd)
			require.NoError(t, err)
			require.Equal(t, tc.stdout, string(out.Stdout))
			require.Equal(t, tc.stderr, string(out.Stderr))
			require.Equal(t, tc.exit, out.ExitCode)
			require.False(t, out.StdoutTruncated)
			require.False(t, out.StderrTruncated)
			require.Positive(t, out.Duration)
		})
	}
	require.Equal(t, 1, sessions(srv), "every command must share one session:\n%s", srv.Log())

	// A command with stdin needs a session of its own.
	out, err := sh.Run(testCtx(t), remote.Command{Line: "tr a-z A-Z", Stdin: []byte("piped\n")})
	require.NoError(t, err)
	require.Equal(t, "PIPED\n", string(out.Stdout))
	require.Equal(t, 2, sessions(srv))
}

func TestShellHostileCommandText(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{})
	sh := newShell(t, newSSH(t, hostConfig(t, srv)))
	canary := filepath.Join(t.TempDir(), "pwned")
	touch := "touch " + canary
	values := []string{
		"; " + touch,
		"$(" + touch + ")",
		"`" + touch + "`",
		"x\n" + touch,
		"x\r\n" + touch + "\n",
		"' ; " + touch + "; '",
		`" ; ` + touch + `; "`,
		`\'; ` + touch + `; \'`,
		"$HOME ${PATH} $$ $0 $1",
		"*", "~", "-n", "--", "", "-",
		"héllo ☃ 日本語 \u202e",
		"%s %n %x %%", `\n \\ \0 \101 \c`,
		"tab\there", "  leading and trailing  ",
		"run 99 echo\nget 1 0 0\nkill 1 x\n",
		"out 1\n\nend 1\n",
	}
	for i, v := range values {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			line := shell.Join("printf", "%s", v) + "; " + shell.Join("printf", "%s", v) + " >&2"
			out, err := sh.Run(testCtx(t), remote.Command{Line: line})
			require.NoError(t, err)
			require.Equal(t, v, string(out.Stdout))
			require.Equal(t, v, string(out.Stderr))
			require.Zero(t, out.ExitCode)
		})
	}
	require.NoFileExists(t, canary)
	require.Equal(t, 1, sessions(srv))

	_, err := sh.Run(testCtx(t), remote.Command{Line: "echo a\x00b"})
	require.ErrorContains(t, err, "NUL byte")
}

func TestShellConcurrentCommandsShareOneSession(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{})
	sh := newShell(t, newSSH(t, hostConfig(t, srv)))
	const n = 40
	var wg sync.WaitGroup
	errs := make([]error, n)
	outs := make([]remote.Output, n)
	for i := range n {
		wg.Go(func() {
			line := fmt.Sprintf("echo out%d; echo err%d >&2; exit %d", i, i, i%7)
			outs[i], errs[i] = sh.Run(testCtx(t), remote.Command{Line: line})
		})
	}
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i])
		require.Equal(t, fmt.Sprintf("out%d\n", i), string(outs[i].Stdout))
		require.Equal(t, fmt.Sprintf("err%d\n", i), string(outs[i].Stderr))
		require.Equal(t, i%7, outs[i].ExitCode)
	}
	require.Equal(t, 1, sessions(srv), "%d commands must open one session:\n%s", n, srv.Log())
}

// TestShellCommandsRunConcurrently shows that the driver does not wait for
// one job before starting the next: the second command releases the first.
func TestShellCommandsRunConcurrently(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{})
	sh := newShell(t, newSSH(t, hostConfig(t, srv)))
	fifo := filepath.Join(t.TempDir(), "fifo")
	first := make(chan remote.Output, 1)
	go func() {
		out, err := sh.Run(testCtx(t), remote.Command{Line: shell.Join("mkfifo", fifo) + "; " + shell.Join("cat", fifo)})
		if err != nil {
			out.Stderr = []byte(err.Error())
		}
		first <- out
	}()
	require.Eventually(t, func() bool { _, err := os.Stat(fifo); return err == nil }, 10*time.Second, 10*time.Millisecond)
	_, err := sh.Run(testCtx(t), remote.Command{Line: "echo released > " + shell.Quote(fifo)})
	require.NoError(t, err)
	out := <-first
	require.Equal(t, "released\n", string(out.Stdout), string(out.Stderr))
	require.Equal(t, 1, sessions(srv))
}

func TestShellOutputCap(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{})
	sh := newShell(t, newSSH(t, hostConfig(t, srv)))
	big := "head -c 300000 /dev/zero | tr '\\0' o; head -c 300000 /dev/zero | tr '\\0' e >&2; echo finished >&2"

	out, err := sh.Run(testCtx(t), remote.Command{Line: big, MaxOutput: 1000})
	require.NoError(t, err)
	require.True(t, out.StdoutTruncated)
	require.True(t, out.StderrTruncated)
	require.Equal(t, strings.Repeat("o", 1000)+remote.TruncationMarker, string(out.Stdout))
	require.Equal(t, strings.Repeat("e", 1000)+remote.TruncationMarker, string(out.Stderr))

	// Exactly at the cap is not truncated, and the session is still good.
	out, err = sh.Run(testCtx(t), remote.Command{Line: "head -c 1000 /dev/zero | tr '\\0' x", MaxOutput: 1000})
	require.NoError(t, err)
	require.False(t, out.StdoutTruncated)
	require.Equal(t, strings.Repeat("x", 1000), string(out.Stdout))
	require.Equal(t, 1, sessions(srv))
}

func TestShellTimeoutKillsRemoteProcessTree(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{})
	sh := newShell(t, newSSH(t, hostConfig(t, srv)))
	marker := fmt.Sprintf("%d.%d", 5000+os.Getpid()%1000, time.Now().UnixNano()%1000000)
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	t.Cleanup(func() { killAll(t, pgrep(t, "sleep "+marker)) })
	line := fmt.Sprintf("echo started; (sleep %s; echo child-survived) & echo $! > %s; sleep %s; echo not-stopped", marker, shell.Quote(pidFile), marker)
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	// The step "times out" once both sleeps run, which the test sees
	// rather than waits for.
	go timeOutOnceRunning(ctx, cancel, "sleep "+marker, 2)

	out, err := sh.Run(ctx, remote.Command{Line: line})

	var terr *remote.TimeoutError
	require.ErrorAs(t, err, &terr)
	require.Equal(t, "web1", terr.Host)
	require.Equal(t, line, terr.Command)
	require.EqualError(t, terr.Cause, "step timeout")
	require.Equal(t, "started\n", string(out.Stdout), "output before the deadline is kept")
	pid, err := os.ReadFile(pidFile)
	require.NoError(t, err)
	// The kill was sent and the job reaped before Run returned; the poll
	// only covers the kernel reaping the backgrounded child.
	require.Eventually(t, func() bool {
		_, err := os.Stat("/proc/" + strings.TrimSpace(string(pid)))
		return errors.Is(err, os.ErrNotExist) && len(pgrep(t, "sleep "+marker)) == 0
	}, 5*time.Second, 20*time.Millisecond, "remote processes survived the timeout")

	// The session is still good for the next command, and it was the only one.
	out, err = sh.Run(testCtx(t), remote.Command{Line: "echo next"})
	require.NoError(t, err)
	require.Equal(t, "next\n", string(out.Stdout))
	require.Equal(t, 1, sessions(srv))
}

// TestShellDriverKilled kills the driver from one of its own commands, with
// another in flight: both fail as lost, and the next command reopens.
func TestShellDriverKilled(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{})
	sh := newShell(t, newSSH(t, hostConfig(t, srv)))
	_, err := sh.Run(testCtx(t), remote.Command{Line: "true"})
	require.NoError(t, err)

	marker := fmt.Sprintf("%d.%d", 6000+os.Getpid()%1000, time.Now().UnixNano()%1000000)
	t.Cleanup(func() { killAll(t, pgrep(t, "sleep "+marker)) })
	other := make(chan error, 1)
	go func() {
		_, err := sh.Run(testCtx(t), remote.Command{Line: "sleep " + marker})
		other <- err
	}()
	require.Eventually(t, func() bool { return len(pgrep(t, "sleep "+marker)) > 0 }, 10*time.Second, 10*time.Millisecond)
	// The job's parent is the driver.
	_, err = sh.Run(testCtx(t), remote.Command{Line: "kill -KILL $PPID"})
	require.ErrorIs(t, err, sshrun.ErrConnectionLost)
	// The sleeping job outlives its driver, as a command outlives a dropped
	// SSH session, but it does not hold the session open: its command
	// learns at once that it is lost.
	require.ErrorIs(t, <-other, sshrun.ErrConnectionLost)

	out, err := sh.Run(testCtx(t), remote.Command{Line: "echo again"})
	require.NoError(t, err)
	require.Equal(t, "again\n", string(out.Stdout))
	require.Equal(t, 2, sessions(srv))
}

func TestShellConnectionDrops(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{})
	s := newSSH(t, hostConfig(t, srv))
	sh := newShell(t, s)
	marker := fmt.Sprintf("%d.%d", 7000+os.Getpid()%1000, time.Now().UnixNano()%1000000)
	t.Cleanup(func() { killAll(t, pgrep(t, "sleep "+marker)) })
	done := make(chan error, 1)
	go func() {
		_, err := sh.Run(testCtx(t), remote.Command{Line: "sleep " + marker})
		done <- err
	}()
	require.Eventually(t, func() bool { return len(pgrep(t, "sleep "+marker)) > 0 }, 10*time.Second, 10*time.Millisecond)

	srv.DropConnections()

	err := <-done
	require.ErrorIs(t, err, sshrun.ErrConnectionLost)
	require.NotErrorAs(t, err, new(*remote.TimeoutError), "a lost connection is not a timeout: %v", err)
	out, err := sh.Run(testCtx(t), remote.Command{Line: "echo again"})
	require.NoError(t, err)
	require.Equal(t, "again\n", string(out.Stdout))
	require.Equal(t, 2, s.Dials())
}

func TestShellClosed(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{})
	sh := newShell(t, newSSH(t, hostConfig(t, srv)))
	_, err := sh.Run(testCtx(t), remote.Command{Line: "true"})
	require.NoError(t, err)
	require.NoError(t, sh.Close())

	_, err = sh.Run(testCtx(t), remote.Command{Line: "true"})
	require.ErrorIs(t, err, sshrun.ErrClosed)
}

// TestShellWithoutSetsid runs the driver on a host whose PATH has no
// setsid: jobs stay in the driver's process group, and a timeout kills the
// job and its children the way Runner.Run does on a server that does not
// setsid.
func TestShellWithoutSetsid(t *testing.T) {
	bin := t.TempDir()
	for _, dir := range []string{"/usr/bin", "/bin"} {
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		for _, e := range entries {
			if e.Name() == "setsid" {
				continue
			}
			// Both directories may be the same (merged /usr): the first wins.
			_ = os.Symlink(filepath.Join(dir, e.Name()), filepath.Join(bin, e.Name()))
		}
	}
	srv := sshdtest.Start(t, sshdtest.Options{Config: []string{"SetEnv PATH=" + bin}})
	sh := newShell(t, newSSH(t, hostConfig(t, srv)))

	out, err := sh.Run(testCtx(t), remote.Command{Line: `command -v setsid || echo none; read -r a b c d pgid rest </proc/$$/stat; [ "$pgid" != "$$" ] && echo not-leader`})
	require.NoError(t, err)
	require.Equal(t, "none\nnot-leader\n", string(out.Stdout))

	marker := fmt.Sprintf("%d.%d", 8000+os.Getpid()%1000, time.Now().UnixNano()%1000000)
	t.Cleanup(func() { killAll(t, pgrep(t, "sleep "+marker)) })
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	go timeOutOnceRunning(ctx, cancel, "sleep "+marker, 1)
	_, err = sh.Run(ctx, remote.Command{Line: "sleep " + marker + "; echo not-stopped"})
	var terr *remote.TimeoutError
	require.ErrorAs(t, err, &terr)
	require.Eventually(t, func() bool { return len(pgrep(t, "sleep "+marker)) == 0 },
		5*time.Second, 20*time.Millisecond, "the job's child survived the timeout")
	out, err = sh.Run(testCtx(t), remote.Command{Line: "echo next"})
	require.NoError(t, err)
	require.Equal(t, "next\n", string(out.Stdout))
	require.Equal(t, 1, sessions(srv))
}

// timeOutOnceRunning cancels ctx as a step timeout would once n processes
// match pattern, so that a test sees the processes start rather than
// waits a guessed time for them. It runs on a goroutine of its own, so it
// reports a failed pgrep as the cancel cause, not through require.
func timeOutOnceRunning(ctx context.Context, cancel context.CancelCauseFunc, pattern string, n int) {
	for ctx.Err() == nil {
		pids, err := findPIDs(pattern)
		if err != nil {
			cancel(err)
			return
		}
		if len(pids) >= n {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel(errors.New("step timeout"))
}
