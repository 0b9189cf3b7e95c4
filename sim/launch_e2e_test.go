package sim_test

import (
	"bufio"
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
	"go.yaml.in/yaml/v3"
)

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { _ = ln.Close() }() // only the port was wanted
	return ln.Addr().(*net.TCPAddr).Port
}

// TestFixtureServeScriptRuns launches the fixture's real decode serve script with
// only the interpreter line changed (and the ports moved to free ones, so parallel
// runs cannot collide). Unknown flags are ignored with a warning.
func TestFixtureServeScriptRuns(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(fixtureDir, "serve_dsv4_decode.sh"))
	require.NoError(t, err)
	port, boot := freePort(t), freePort(t)
	script := strings.NewReplacer(
		"/opt/sglang/venv/bin/python3 -m sglang.launch_server", simBinary+" engine",
		"--port 30200", fmt.Sprintf("--port %d", port),
		"--host 0.0.0.0", "--host 127.0.0.1",
		"--disaggregation-bootstrap-port 8998", fmt.Sprintf("--disaggregation-bootstrap-port %d", boot),
	).Replace(string(b))
	path := filepath.Join(t.TempDir(), "serve_dsv4_decode.sh")
	require.NoError(t, os.WriteFile(path, []byte(script), 0o755))

	cmd := exec.Command("/bin/bash", path)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	stderrPath := filepath.Join(t.TempDir(), "stderr")
	stderrFile, err := os.Create(stderrPath)
	require.NoError(t, err)
	defer func() { _ = stderrFile.Close() }() // the child has its own copy
	cmd.Stderr = stderrFile
	stderr := func() string { b, _ := os.ReadFile(stderrPath); return string(b) }
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	lines := make(chan string, 256)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<16), 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var startup []string
	deadline := time.After(10 * time.Second)
	for ready := false; !ready; {
		select {
		case l, ok := <-lines:
			require.True(t, ok, "engine exited: %s", stderr())
			startup = append(startup, l)
			ready = strings.HasSuffix(l, "The server is fired up and ready to roll!")
		case <-deadline:
			t.Fatalf("engine not ready; stdout so far: %q", startup)
		}
	}
	joined := strings.Join(startup, "\n")
	for _, want := range []string{"disaggregation_mode='decode'", "disaggregation_transfer_backend='nixl'",
		"disable_overlap_schedule=False", "] NIXL KVManager initialized with backend: UCX", "DP3 TP3]"} {
		require.Contains(t, joined, want)
	}
	require.Equal(t, 200, httpStatus(t, fmt.Sprintf("http://127.0.0.1:%d/health", port)))
	require.Len(t, scrape(t, fmt.Sprintf("http://127.0.0.1:%d", port))["sglang:num_running_reqs"].GetMetric(), 4, "one series per DP rank")
	require.Contains(t, stderr(), "--mem-fraction-static", "unmodelled flags are warned about")
}

// TestUpWritesInventoryAndUnits checks the files `up` leaves behind (the inventory
// contract with runbot), the systemctl-show output, and that the roles are
// detached processes whose command lines carry the scripts' flags.
func TestUpWritesInventoryAndUnits(t *testing.T) {
	t.Parallel()
	start := time.Now()
	d := up(t, "--name", "dsv4", "--transfer-backend", "nixl")
	require.Less(t, time.Since(start), 3*time.Second, "up serves all three roles well under a second each")

	var inv struct {
		Hosts map[string]struct {
			Transport      string            `yaml:"transport"`
			ServiceManager map[string]string `yaml:"service_manager"`
		} `yaml:"hosts"`
		Deployments map[string]struct {
			Roles map[string]map[string]string `yaml:"roles"`
		} `yaml:"deployments"`
	}
	b, err := os.ReadFile(filepath.Join(d.dir, "inventory.yaml"))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(b, &inv))
	local := inv.Hosts["local"]
	require.Equal(t, "local", local.Transport)
	require.Equal(t, "command", local.ServiceManager["type"])
	require.Equal(t, simBinary+" ctl --dir "+d.dir+" restart {unit}", local.ServiceManager["restart"])
	roles := inv.Deployments["dsv4"].Roles
	require.Len(t, roles, 3)
	require.Equal(t, d.endpoints["router"], roles["router"]["url"])
	require.Equal(t, d.endpoints["decode"]+"/metrics", roles["decode"]["metrics_url"])
	require.Equal(t, filepath.Join(d.dir, "serve_prefill.sh"), roles["prefill"]["launch_script"])
	require.Equal(t, filepath.Join(d.dir, "decode.log"), roles["decode"]["log_file"])

	// Run the inventory's show command the way runbot would.
	show := strings.ReplaceAll(local.ServiceManager["show"], "{unit}", "decode")
	out, err := exec.Command("/bin/sh", "-c", show).Output()
	require.NoError(t, err)
	st := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		k, v, _ := strings.Cut(l, "=")
		st[k] = v
	}
	require.Equal(t, "active", st["ActiveState"])
	require.Equal(t, "running", st["SubState"])
	require.Equal(t, "0", st["NRestarts"])
	require.Equal(t, "0", st["ExecMainStatus"])
	_, err = time.Parse("Mon 2006-01-02 15:04:05 MST", st["ActiveEnterTimestamp"])
	require.NoError(t, err)
	pid := d.mainPID(t, "decode")
	pidFile, err := os.ReadFile(filepath.Join(d.dir, "decode.pid"))
	require.NoError(t, err)
	require.Equal(t, fmt.Sprint(pid), strings.TrimSpace(string(pidFile)))
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	require.NoError(t, err)
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	require.Equal(t, simBinary, args[0], "MainPID is the engine itself (the script execs it)")
	require.Contains(t, strings.Join(args, " "), "--disaggregation-mode decode --disaggregation-transfer-backend nixl")
	script, err := os.ReadFile(filepath.Join(d.dir, "serve_decode.sh"))
	require.NoError(t, err)
	require.Contains(t, string(script), "export SGLANG_DISAGGREGATION_NIXL_BACKEND=UCX\n")
	require.Contains(t, string(script), "exec "+simBinary+" engine \\\n")

	_, err = runSim(t, "up", "--dir", d.dir)
	require.ErrorContains(t, err, "already up", "a second up in the same directory is refused")

	d.ctl(t, "stop", "decode")
	st2 := d.show(t, "decode")
	require.Equal(t, "inactive", st2["ActiveState"])
	require.Equal(t, "dead", st2["SubState"])
	require.Equal(t, "0", st2["MainPID"])
	require.False(t, processRunning(pid))
	d.ctl(t, "start", "decode")
	require.Equal(t, "active", d.show(t, "decode")["ActiveState"])
	require.Contains(t, d.ctl(t, "status"), "decode   active/running")
}

// TestUpReportsStartFailure: a role that cannot start makes up fail with its log tail.
func TestUpReportsStartFailure(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, err := runSim(t, "up", "--dir", dir, "--engine-arg", "--sim-log-format", "--engine-arg", "1999-early")
	require.Error(t, err)
	require.Contains(t, out, "failed to start")
	require.Contains(t, out, `unknown log format "1999-early"`)
	_, err = runSim(t, "down", "--dir", dir)
	require.NoError(t, err)
}

// TestLoadCommand drives the load generator against a healthy and a wedged deployment.
func TestLoadCommand(t *testing.T) {
	t.Parallel()
	d := up(t)
	out, err := runSim(t, "load", "--rate", "40", "--duration", "500ms", "--timeout", "3s", "--stream", d.endpoints["router"])
	require.NoError(t, err)
	require.Regexp(t, `^sent=(\d+) ok=(\d+) timed_out=0 errors=0 `, out)

	d.ctl(t, "fault", "pd-wedge")
	out, err = runSim(t, "load", "--rate", "10", "--duration", "300ms", "--timeout", "400ms", "--id-prefix", "lg", d.endpoints["router"])
	require.NoError(t, err)
	require.Regexp(t, `^sent=(\d+) ok=0 timed_out=[1-9]\d* errors=0 `, out)
	require.Eventually(t, func() bool {
		return len(grep(logLines(t, d.logPath("decode"), 0), decodeAbortRe)) > 8
	}, 5*time.Second, 20*time.Millisecond)
	require.NotEmpty(t, grep(logLines(t, d.logPath("decode"), 0), regexpMust(`rid='lg-1'`)))
	resp, err := http.Get(d.endpoints["router"] + "/health")
	require.NoError(t, err)
	_ = resp.Body.Close()
}

// TestRestartFailsClearly: a launch script edited into a broken state makes `ctl
// restart` exit non-zero with the reason and the log tail, and the unit shows failed.
func TestRestartFailsClearly(t *testing.T) {
	t.Parallel()
	d := up(t)
	path := filepath.Join(d.dir, "serve_decode.sh")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	broken := strings.Replace(string(b), "--disaggregation-mode decode", "--disaggregation-mode unified", 1)
	require.NoError(t, os.WriteFile(path, []byte(broken), 0o755))
	out, err := runSim(t, "ctl", "--dir", d.dir, "restart", "decode")
	require.Error(t, err)
	require.Contains(t, out, "decode failed to start (exit-code, status 1)")
	require.Contains(t, out, `invalid --disaggregation-mode "unified"`)
	st := d.show(t, "decode")
	require.Equal(t, "failed", st["ActiveState"])
	require.Equal(t, "1", st["ExecMainStatus"])
}
