package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestServeSpeaksSdNotify runs `runbot serve` with NOTIFY_SOCKET pointing
// at a real unix datagram socket, as systemd does for Type=notify, and
// checks READY=1 comes only once /readyz is green, WATCHDOG=1 follows, and
// SIGTERM yields STOPPING=1 and a clean exit.
func TestServeSpeaksSdNotify(t *testing.T) {
	runbot, _ := buildBinaries(t)
	dir := t.TempDir()
	sock := filepath.Join(dir, "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	require.NoError(t, err)
	defer func() { _ = conn.Close() }() // test cleanup

	port := freePort(t)
	cfg := filepath.Join(dir, "runbot.yaml")
	require.NoError(t, os.WriteFile(cfg, fmt.Appendf(nil, "listen: 127.0.0.1:%d\nstore: %s\nshutdown_grace: 5s\n", port, filepath.Join(dir, "runbot.db")), 0o600))
	cmd := exec.Command(runbot, "serve", "--config", cfg)
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+sock, "WATCHDOG_USEC=400000")
	logs := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill() }()

	msgs := notifications(conn)
	next := func(what string) string {
		select {
		case m := <-msgs:
			return m
		case <-time.After(20 * time.Second):
			t.Fatalf("no %s notification; runbot said:\n%s", what, logs.String())
		}
		return ""
	}
	ready := next("READY")
	require.True(t, strings.HasPrefix(ready, "READY=1"), ready)
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", port))
	require.NoError(t, err)
	_ = resp.Body.Close() // only the status matters
	require.Equal(t, 200, resp.StatusCode, "READY=1 is sent only when /readyz is green")
	require.Equal(t, "WATCHDOG=1", next("WATCHDOG"))

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	for m := next("STOPPING"); m != "STOPPING=1"; m = next("STOPPING") {
		require.Equal(t, "WATCHDOG=1", m)
	}
	require.NoError(t, cmd.Wait(), logs.String())
}

func freePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(tb, err)
	defer func() { _ = l.Close() }() // only the port was wanted
	return l.Addr().(*net.TCPAddr).Port
}

// notifications delivers each datagram sent to conn (sd_notify's
// messages) until conn is closed, when the channel is closed too.
func notifications(conn *net.UnixConn) <-chan string {
	msgs := make(chan string, 64)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				close(msgs)
				return
			}
			msgs <- string(buf[:n])
		}
	}()
	return msgs
}
