package sshrun_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
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

func TestSSHRun(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{})
	s := newSSH(t, hostConfig(t, srv))
	cases := []struct {
		name           string
		cmd            remote.Command
		stdout, stderr string
		exit           int
	}{
		{name: "streams apart", cmd: remote.Command{Line: "echo out; echo err >&2"}, stdout: "out\n", stderr: "err\n"},
		{name: "exit status", cmd: remote.Command{Line: "echo partial; exit 3"}, stdout: "partial\n", exit: 3},
		{name: "stdin", cmd: remote.Command{Line: "tr a-z A-Z", Stdin: []byte("piped\n")}, stdout: "PIPED\n"},
		{name: "no stdin reads eof", cmd: remote.Command{Line: "cat; echo done"}, stdout: "done\n"},
		// More than the SSH window, so feeding it outlives the command.
		{name: "stdin left unread", cmd: remote.Command{Line: "echo ignored", Stdin: make([]byte, 4<<20)}, stdout: "ignored\n"},
		{name: "killed by TERM", cmd: remote.Command{Line: "kill -TERM $$"}, exit: 128 + 15},
		{name: "killed by KILL", cmd: remote.Command{Line: "echo before; kill -KILL $$"}, stdout: "before\n", exit: 128 + 9},
		{name: "posix shell", cmd: remote.Command{Line: `x=1; [ "$x" = 1 ] && printf '%s\n' "$0"`}, stdout: "/bin/sh\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := s.Run(testCtx(t), tc.cmd)
			require.NoError(t, err)
			require.Equal(t, tc.stdout, string(out.Stdout))
			require.Equal(t, tc.stderr, string(out.Stderr))
			require.Equal(t, tc.exit, out.ExitCode)
			require.False(t, out.StdoutTruncated)
			require.Positive(t, out.Duration)
		})
	}
	require.Equal(t, 1, s.Dials(), "every command must share one connection")
}

func TestSSHWrongKeyIsRefused(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{})
	other := sshdtest.Start(t, sshdtest.Options{}) // its client key is not authorized on srv
	cfg := hostConfig(t, srv)
	cfg.IdentityFiles = []string{other.ClientKeyFile}
	canary := filepath.Join(t.TempDir(), "ran")

	_, err := newSSH(t, cfg).Run(testCtx(t), remote.Command{Line: shell.Join("touch", canary)})

	var cerr *sshrun.ConnectError
	require.ErrorAs(t, err, &cerr)
	require.Equal(t, "web1", cerr.Host)
	require.Contains(t, err.Error(), "unable to authenticate")
	require.NoFileExists(t, canary)
}

func TestSSHOutputCap(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{})
	cfg := hostConfig(t, srv)
	cfg.MaxOutput = 2000
	s := newSSH(t, cfg)
	big := "head -c 300000 /dev/zero | tr '\\0' o; head -c 300000 /dev/zero | tr '\\0' e >&2; echo finished >&2"

	out, err := s.Run(testCtx(t), remote.Command{Line: big, MaxOutput: 1000})
	require.NoError(t, err)
	require.Equal(t, strings.Repeat("o", 1000)+remote.TruncationMarker, string(out.Stdout))
	require.Equal(t, strings.Repeat("e", 1000)+remote.TruncationMarker, string(out.Stderr))
	require.True(t, out.StdoutTruncated)
	require.True(t, out.StderrTruncated)
	require.Zero(t, out.ExitCode, "a capped command still runs to completion")

	// Without a per-command cap, the host's cap applies.
	out, err = s.Run(testCtx(t), remote.Command{Line: big})
	require.NoError(t, err)
	require.Len(t, out.Stdout, 2000+len(remote.TruncationMarker))
}

// TestSSHHostileArguments sends values from outside through shell.Quote to
// a real sshd and login shell, and checks that each arrives as one literal
// word and that nothing it contains was executed.
func TestSSHHostileArguments(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{})
	s := newSSH(t, hostConfig(t, srv))
	canary := filepath.Join(t.TempDir(), "pwned")
	touch := "touch " + canary
	values := []string{
		"; rm -rf /",
		"; " + touch,
		"$(" + touch + ")",
		"`" + touch + "`",
		"x\n" + touch,
		"x\r\n" + touch + "\n",
		"' ; " + touch + "; '",
		`" ; ` + touch + `; "`,
		`\'; ` + touch + `; \'`,
		"&& " + touch,
		"| " + touch,
		"> " + canary,
		"$HOME ${PATH} $$ $0 $1",
		"*", "~", "-n", "--", "",
		"héllo ☃ 日本語 \u202e",
		"%s %n %x",
		"tab\there",
	}
	for i, v := range values {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			out, err := s.Run(testCtx(t), remote.Command{Line: shell.Join("printf", "%s", v)})
			require.NoError(t, err)
			require.Equal(t, v, string(out.Stdout))
			require.Empty(t, out.Stderr)
			require.Zero(t, out.ExitCode)
		})
	}
	require.NoFileExists(t, canary)
}

func TestSSHTimeoutKillsRemoteProcessTree(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{})
	s := newSSH(t, hostConfig(t, srv))
	// A marker that only this test's processes carry on their command line.
	marker := fmt.Sprintf("%d.%d", 3000+os.Getpid()%1000, time.Now().UnixNano()%1000000)
	line := fmt.Sprintf("echo started; (sleep %s; echo child-survived) & sleep %s; echo not-stopped", marker, marker)
	ctx, cancel := context.WithTimeoutCause(t.Context(), 700*time.Millisecond, errors.New("step timeout"))
	defer cancel()

	out, err := s.Run(ctx, remote.Command{Line: line})

	var terr *remote.TimeoutError
	require.ErrorAs(t, err, &terr)
	require.Equal(t, "web1", terr.Host)
	require.Equal(t, line, terr.Command)
	require.GreaterOrEqual(t, terr.After, 700*time.Millisecond)
	require.EqualError(t, terr.Cause, "step timeout")
	require.Contains(t, err.Error(), "web1")
	require.Equal(t, "started\n", string(out.Stdout), "output before the deadline is kept")
	// Both the command and the child it backgrounded are gone. The kill was
	// sent before Run returned; the poll only covers the kernel reaping.
	require.Eventually(t, func() bool { return len(pgrep(t, "sleep "+marker)) == 0 },
		5*time.Second, 20*time.Millisecond, "remote processes survived the timeout")

	// The connection is still good for the next command.
	out, err = s.Run(testCtx(t), remote.Command{Line: "echo next"})
	require.NoError(t, err)
	require.Equal(t, "next\n", string(out.Stdout))
}

func TestSSHHostGoesDownMidRun(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{})
	s := newSSH(t, hostConfig(t, srv))
	marker := fmt.Sprintf("%d.%d", 4000+os.Getpid()%1000, time.Now().UnixNano()%1000000)
	t.Cleanup(func() { killAll(t, pgrep(t, "sleep "+marker)) })

	done := make(chan error, 1)
	go func() {
		_, err := s.Run(testCtx(t), remote.Command{Line: "sleep " + marker})
		done <- err
	}()
	require.Eventually(t, func() bool { return len(pgrep(t, "sleep "+marker)) > 0 }, 10*time.Second, 10*time.Millisecond)
	srv.Stop()

	err := <-done
	require.ErrorIs(t, err, sshrun.ErrConnectionLost)
	var terr *remote.TimeoutError
	require.NotErrorAs(t, err, &terr, "a lost connection is not a timeout: %v", err)

	// While the host is down, commands fail fast with a connect error.
	_, err = s.Run(testCtx(t), remote.Command{Line: "true"})
	var cerr *sshrun.ConnectError
	require.ErrorAs(t, err, &cerr)

	// When it is back, the runner reconnects by itself.
	srv.Restart()
	out, err := s.Run(testCtx(t), remote.Command{Line: "echo back"})
	require.NoError(t, err)
	require.Equal(t, "back\n", string(out.Stdout))
}

func TestSSHReconnectsAfterConnectionBreaks(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{})
	s := newSSH(t, hostConfig(t, srv))
	_, err := s.Run(testCtx(t), remote.Command{Line: "true"})
	require.NoError(t, err)

	srv.DropConnections()

	out, err := s.Run(testCtx(t), remote.Command{Line: "echo again"})
	require.NoError(t, err)
	require.Equal(t, "again\n", string(out.Stdout))
	require.Equal(t, 2, s.Dials())
}

// TestSSHKeepAliveNoticesSilentHost freezes the connection the way a host
// that vanished without a TCP reset does: the next command must not hang
// until its deadline but reconnect once the keepalive gives up.
func TestSSHKeepAliveNoticesSilentHost(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{})
	proxy := startFreezableProxy(t, srv.Addr)
	cfg := hostConfig(t, srv)
	cfg.Port = proxy.port
	cfg.PinnedHostKeys = []string{srv.HostPublicKey}
	cfg.KeepAlive = 100 * time.Millisecond
	s := newSSH(t, cfg)
	_, err := s.Run(testCtx(t), remote.Command{Line: "true"})
	require.NoError(t, err)

	proxy.freezeExisting()

	out, err := s.Run(testCtx(t), remote.Command{Line: "echo through-new-connection"})
	require.NoError(t, err)
	require.Equal(t, "through-new-connection\n", string(out.Stdout))
	require.Equal(t, 2, s.Dials())
}

// TestSSHConcurrentCommandsShareOneConnection runs more commands at once
// than sshd's MaxSessions allows; the runner must queue, not fail.
func TestSSHConcurrentCommandsShareOneConnection(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{Config: []string{"MaxSessions 4"}})
	cfg := hostConfig(t, srv)
	cfg.MaxSessions = 4
	s := newSSH(t, cfg)
	var wg sync.WaitGroup
	errs := make([]error, 24)
	outs := make([]string, 24)
	for i := range errs {
		wg.Go(func() {
			out, err := s.Run(testCtx(t), remote.Command{Line: fmt.Sprintf("sleep 0.05; echo %d", i)})
			errs[i], outs[i] = err, string(out.Stdout)
		})
	}
	wg.Wait()
	for i := range errs {
		require.NoError(t, errs[i])
		require.Equal(t, fmt.Sprintf("%d\n", i), outs[i])
	}
	require.Equal(t, 1, s.Dials())
	require.Equal(t, 1, strings.Count(srv.Log(), "Accepted publickey"))
}

// pgrep lists the pids whose command line contains pattern.
func pgrep(t *testing.T, pattern string) []int {
	t.Helper()
	pids, err := findPIDs(pattern)
	require.NoError(t, err)
	return pids
}

// findPIDs is pgrep for a goroutine other than the test's, which must not
// fail the test itself: it returns the error instead.
func findPIDs(pattern string) ([]int, error) {
	out, err := exec.Command("pgrep", "-f", "--", pattern).Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 1 {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("pgrep (Debian package procps): %w", err)
	}
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		p, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("pgrep printed %q: %w", f, err)
		}
		pids = append(pids, p)
	}
	return pids, nil
}

func killAll(t *testing.T, pids []int) {
	t.Helper()
	for _, p := range pids {
		if proc, err := os.FindProcess(p); err == nil {
			_ = proc.Kill() // it may be gone already
		}
	}
}
