package checks

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/argspec"
	"github.com/runbot/runbot/internal/target"
	"github.com/runbot/runbot/remote"
)

// TestHelperProcess is not a test: it is the stand-in server process that
// the flag tests start, with whatever arguments they want on its command
// line (after --, where the testing package ignores them).
func TestHelperProcess(t *testing.T) {
	if os.Getenv("RUNBOT_FLAG_HELPER") != "1" {
		return
	}
	time.Sleep(time.Minute)
	os.Exit(0)
}

// startServer starts a process whose command line carries args, like the
// serve script's exec'ed python, and stops it when the test ends.
func startServer(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestHelperProcess$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), "RUNBOT_FLAG_HELPER=1")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

// services is a ServiceManager that reports a fixed unit state, as systemd
// would for the unit running the process under test.
type services struct {
	state remote.UnitState
	err   error
}

func (s services) Show(_ context.Context, unit string) (remote.UnitState, error) {
	st := s.state
	st.Unit = unit
	return st, s.err
}

func (services) Restart(context.Context, string) error { return errors.New("not in this test") }

func (services) RestartCall(unit string) string { return "restart " + unit }

func writeScript(t *testing.T, body string, modified time.Time) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "serve_dsv4_decode.sh")
	require.NoError(t, os.WriteFile(p, []byte(body), 0o755))
	require.NoError(t, os.Chtimes(p, modified, modified))
	return p
}

const scriptWithFlag = "#!/bin/bash\nexec python3 -m sglang.launch_server \\\n  --port 30200 \\\n  --disable-overlap-schedule \\\n  --decode-log-interval 40\n"

func flagEnv(script string, st remote.UnitState, flag string) Env {
	return Env{
		Target: target.Target{Role: "decode", Host: "gpu-node-01", Runner: &remote.Local{Name: "gpu-node-01"},
			Services: services{state: st}, Unit: "sglang-dsv4-decode", LaunchScript: script},
		Args: argspec.Values{"flag": flag},
	}
}

func runFlag(t *testing.T, env Env) (FlagOutput, []string) {
	t.Helper()
	res, err := Flag{}.Run(t.Context(), env)
	require.NoError(t, err)
	o, ok := res.Values.(FlagOutput)
	require.True(t, ok, "Values is %T", res.Values)
	for _, l := range res.Evidence {
		t.Log(l)
	}
	return o, res.Evidence
}

func TestFlag(t *testing.T) {
	started := time.Date(2026, 6, 18, 19, 41, 0, 0, time.UTC)
	before, after := started.Add(-time.Hour), started.Add(time.Hour)
	const overlap = "--disable-overlap-schedule"

	cases := []struct {
		name             string
		script           string // "" uses the fixture decode script
		modified         time.Time
		process          []string
		inScript, inProc bool
		drift, newer     bool
		evidence         string
	}{
		{name: "the incident: absent from both", process: []string{"--port", "30200"},
			evidence: "absent; running process (pid PID): absent — consistent"},
		{name: "set in both", script: scriptWithFlag, modified: before, process: []string{"--port", "30200", overlap},
			inScript: true, inProc: true, evidence: "set (SCRIPT:4); running process (pid PID): set — consistent"},
		{name: "added to the script, not yet restarted", script: scriptWithFlag, modified: after, process: []string{"--port", "30200"},
			inScript: true, drift: true, newer: true,
			evidence: "drift: the script has it but the running process does not; a restart would apply it (script modified 20:41:00 UTC, after the process started 19:41:00 UTC)"},
		{name: "started by hand with the flag, script lacks it", process: []string{overlap},
			inProc: true, drift: true, evidence: "drift: the running process has it but the script does not; the next restart drops it"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := c.script
			if body == "" {
				b, err := os.ReadFile(fixtures + "serve_dsv4_decode.sh")
				require.NoError(t, err)
				body, c.modified = string(b), before
			}
			script := writeScript(t, body, c.modified)
			cmd := startServer(t, c.process...)
			o, ev := runFlag(t, flagEnv(script, remote.UnitState{ActiveState: "active", MainPID: cmd.Process.Pid, ActiveEnter: started}, overlap))
			require.True(t, o.ProcessKnown)
			require.True(t, o.ScriptReadable)
			require.Equal(t, cmd.Process.Pid, o.MainPID)
			require.Equal(t, c.inScript, o.InScript, "in_script")
			require.Equal(t, c.inProc, o.InProcess, "in_process")
			require.Equal(t, c.drift, o.Drift, "drift")
			require.Equal(t, c.newer, o.ScriptNewer, "script_newer")
			want := strings.NewReplacer("PID", strconv.Itoa(cmd.Process.Pid), "SCRIPT", script).Replace(c.evidence)
			require.Contains(t, ev[0], want)
		})
	}
}

func TestFlagValueDrift(t *testing.T) {
	cmd := startServer(t, "--decode-log-interval=80")
	script := writeScript(t, scriptWithFlag, time.Now())
	o, ev := runFlag(t, flagEnv(script, remote.UnitState{MainPID: cmd.Process.Pid}, "--decode-log-interval"))
	require.Equal(t, "40", o.ScriptValue)
	require.Equal(t, "80", o.ProcessValue)
	require.True(t, o.Drift)
	require.Contains(t, ev[0], "script: set to 40 ("+script+":5); running process")
	require.Contains(t, ev[0], "drift: script and process use different values")
}

// A serve script that runs the server without exec leaves a shell as the
// unit's main process; the flag is then on a child's command line.
func TestFlagShellWrapperWithoutExec(t *testing.T) {
	sh := exec.Command("/bin/sh", "-c", `"$0" -test.run='^TestHelperProcess$' -- --disable-overlap-schedule; exit 0`, os.Args[0])
	sh.Env = append(os.Environ(), "RUNBOT_FLAG_HELPER=1")
	sh.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // so the child goes too
	require.NoError(t, sh.Start())
	t.Cleanup(func() { _ = syscall.Kill(-sh.Process.Pid, syscall.SIGKILL); _ = sh.Wait() })

	env := flagEnv(writeScript(t, scriptWithFlag, time.Now()), remote.UnitState{MainPID: sh.Process.Pid}, "--disable-overlap-schedule")
	require.Eventually(t, func() bool {
		o, _ := runFlag(t, env)
		return o.InProcess
	}, 10*time.Second, 20*time.Millisecond, "the child appears once the shell has forked it")
	o, ev := runFlag(t, env)
	require.False(t, o.Drift)
	require.Contains(t, strings.Join(ev, "\n"), "is a shell (/bin/sh); the flag was found in its child")
}

func TestFlagWithoutAProcess(t *testing.T) {
	script := writeScript(t, scriptWithFlag, time.Now())
	o, ev := runFlag(t, flagEnv(script, remote.UnitState{ActiveState: "inactive"}, "--disable-overlap-schedule"))
	require.True(t, o.InScript)
	require.False(t, o.ProcessKnown)
	require.False(t, o.Drift, "no drift can be claimed without a process")
	require.Contains(t, ev[0], "running process: none (sglang-dsv4-decode has no main process)")

	gone := exec.Command("true")
	require.NoError(t, gone.Run())
	o, ev = runFlag(t, flagEnv(script, remote.UnitState{MainPID: gone.Process.Pid}, "--disable-overlap-schedule"))
	require.False(t, o.ProcessKnown)
	require.Contains(t, strings.Join(ev, "\n"), "exited before its command line could be read")
}

func TestFlagUnreadableScript(t *testing.T) {
	cmd := startServer(t, "--disable-overlap-schedule")
	o, ev := runFlag(t, flagEnv("/nonexistent/serve.sh", remote.UnitState{MainPID: cmd.Process.Pid}, "--disable-overlap-schedule"))
	require.False(t, o.ScriptReadable)
	require.True(t, o.InProcess)
	require.False(t, o.Drift)
	require.Contains(t, ev[0], "script: unreadable")
	require.Contains(t, ev[1], "could not read /nonexistent/serve.sh")
}

func TestFlagServiceManagerFails(t *testing.T) {
	env := flagEnv(writeScript(t, scriptWithFlag, time.Now()), remote.UnitState{}, "--disable-overlap-schedule")
	env.Target.Services = services{err: errors.New("systemctl: connection refused")}
	_, err := Flag{}.Run(t.Context(), env)
	require.ErrorContains(t, err, "systemctl: connection refused")
}

func TestFlagPlan(t *testing.T) {
	plan := Flag{}.Plan(flagEnv("/root/serve_dsv4_decode.sh", remote.UnitState{}, "--disable-overlap-schedule"))
	require.Equal(t, []string{
		"read /root/serve_dsv4_decode.sh on gpu-node-01",
		"read the main PID of sglang-dsv4-decode, then /proc/<pid>/cmdline on gpu-node-01",
		"look for --disable-overlap-schedule in both",
	}, plan)
}

// The overlap schedule can be off with no flag on the command line (set in
// a --config file, or forced off by SGLang); the running server's report
// says what is in effect, and a report that cannot be read leaves the
// command line standing.
func TestFlagReportedByTheServer(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/new/server_info":
			_, _ = io.WriteString(w, `{"model_path": "/m", "disable_overlap_schedule": true, "tp_size": 4}`)
		case "/old/get_server_info":
			_, _ = io.WriteString(w, `{"disable_overlap_schedule":false}`)
		case "/hung/server_info":
			<-block
		default:
			http.Error(w, `{"detail":"Not Found"}`, http.StatusNotFound)
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(block) }) // runs first: srv.Close waits for the blocked handler
	script := writeScript(t, "#!/bin/bash\nexec python3 -m sglang.launch_server --config /etc/sglang/decode.yaml\n", time.Now())
	cases := []struct {
		name, base, reported, errPart string
	}{
		{"new build", "/new", "true", ""},
		{"old build answers the old path", "/old", "false", ""},
		{"blocked scheduler", "/hung", "", "timed out"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := flagEnv(script, remote.UnitState{ActiveState: "inactive"}, "--disable-overlap-schedule")
			env.Target.URL = srv.URL + c.base
			env.Args = argspec.Values{"flag": "--disable-overlap-schedule", "reported_path": "/server_info",
				"reported_fallback_path": "/get_server_info", "reported_key": "disable_overlap_schedule", "reported_timeout": 300 * time.Millisecond}
			o, ev := runFlag(t, env)
			require.False(t, o.InScript)
			require.Equal(t, c.reported, o.Reported)
			if c.errPart != "" {
				require.Contains(t, o.ReportedError, c.errPart)
				require.Contains(t, strings.Join(ev, "\n"), "server report: ")
			} else {
				require.Empty(t, o.ReportedError)
			}
		})
	}
}
