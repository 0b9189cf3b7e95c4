package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
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

	"github.com/runbot/runbot/store"
)

// reloadRunbook is a runbook whose step takes secs and prints version, so
// that a run's report says which version of the runbook it followed.
func reloadRunbook(name, version string, secs int) string {
	return fmt.Sprintf(`name: %s
params:
  host: {type: host, default: here}
steps:
  - {id: work, check: command, target: host, timeout: 2m, with: {cmd: 'sleep %d; echo %s'}}
findings:
  - {id: done, severity: info, when: 'steps.work.stdout != ""', summary: done}
`, name, secs, version)
}

// TestSIGHUPReloadsRunbooksAndKeepsTheOldSetWhenBroken runs the real
// runbot serve under a notify socket, as systemd runs it, and reloads it
// with real SIGHUPs. A reload that adds a runbook and its schedule makes
// it run, while the run in flight during the reload finishes on the
// runbook it started with; a reload with a broken runbook keeps the
// running set, logs each problem as serve --check prints it, sets the
// reload metric to 0, and runbot goes on serving.
func TestSIGHUPReloadsRunbooksAndKeepsTheOldSetWhenBroken(t *testing.T) {
	runbot, _ := buildBinaries(t)
	dir := t.TempDir()
	books := filepath.Join(dir, "runbooks")
	require.NoError(t, os.Mkdir(books, 0o755))
	abs, err := filepath.Abs("testdata")
	require.NoError(t, err)
	db := filepath.Join(dir, "runbot.db")
	port := freePort(t)
	cfgPath := filepath.Join(dir, "runbot.yaml")
	writeConfig := func(schedules ...string) {
		t.Helper()
		cfg := fmt.Sprintf("listen: 127.0.0.1:%d\nstore: %s\ninventory: %s/local.yaml\nrunbooks: [%s]\nschedules:\n", port, db, abs, books)
		for _, s := range schedules {
			cfg += fmt.Sprintf("  - {runbook: %s, cron: \"@every 1s\", post: always}\n", s)
		}
		require.NoError(t, os.WriteFile(cfgPath, []byte(cfg), 0o600))
	}
	writeBook := func(file, text string) {
		t.Helper()
		require.NoError(t, os.WriteFile(filepath.Join(books, file), []byte(text), 0o600))
	}
	// The probe runs long enough for a reload to happen during its run.
	writeBook("probe.yaml", reloadRunbook("probe", "version-one", 6))
	writeConfig("probe")

	sock := filepath.Join(dir, "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	require.NoError(t, err)
	defer func() { _ = conn.Close() }() // test cleanup
	msgs := notifications(conn)

	cmd := exec.Command(runbot, "serve", "--config", cfgPath)
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+sock)
	logs := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill() }()
	next := func(want string) {
		t.Helper()
		select {
		case m := <-msgs:
			require.True(t, strings.HasPrefix(m, want), "notification %q, want %s; runbot said:\n%s", m, want, logs.String())
		case <-time.After(30 * time.Second):
			t.Fatalf("no %s notification; runbot said:\n%s", want, logs.String())
		}
	}
	eventually := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for !cond() {
			require.True(t, time.Now().Before(deadline), "%s; runbot said:\n%s", what, logs.String())
			time.Sleep(100 * time.Millisecond)
		}
	}
	next("READY=1")

	// A probe run is in flight when the reload comes.
	var inFlight store.Run
	eventually("a probe run starts", func() bool {
		runs := runsOf(t, db, "probe")
		if len(runs) > 0 && runs[0].Status == store.RunRunning {
			inFlight = runs[0]
			return true
		}
		return false
	})

	// A good reload: the probe changes, a runbook and its schedule are
	// added.
	writeBook("probe.yaml", reloadRunbook("probe", "version-two", 1))
	writeBook("fresh.yaml", reloadRunbook("fresh", "fresh", 0))
	writeConfig("probe", "fresh")
	require.NoError(t, cmd.Process.Signal(syscall.SIGHUP))
	next("RELOADING=1")
	next("READY=1")
	// The log comes through a pipe: it may trail the notification.
	eventually("the log says reloaded", func() bool { return strings.Contains(logs.String(), "config reloaded") })
	require.Equal(t, "1", metric(t, port, "runbot_config_reload_success"))

	eventually("the new runbook runs on its schedule", func() bool { return finished(runsOf(t, db, "fresh")) > 0 })
	eventually("the run in flight during the reload ends", func() bool {
		return getRun(t, db, inFlight.ID).Status.Final()
	})
	old := getRun(t, db, inFlight.ID)
	require.Contains(t, string(old.Report), "version-one", "the run in flight finishes on the runbook it started with")
	require.NotContains(t, string(old.Report), "version-two")
	eventually("the probe runs its new version", func() bool {
		for _, r := range runsOf(t, db, "probe") {
			if r.Status.Final() && strings.Contains(string(r.Report), "version-two") {
				return true
			}
		}
		return false
	})

	// A broken reload: a runbook that does not load, and a config that
	// drops the fresh schedule. Nothing of it is installed.
	writeBook("broken.yaml", "name: broken\nsteps:\n  - {id: x, check: no-such-check}\nbogus: 1\n")
	writeConfig("probe")
	check, _ := exec.Command(runbot, "serve", "--check", "--config", cfgPath).Output() // exit 1: it found the errors
	problems := strings.Split(strings.TrimSpace(string(check)), "\n")
	require.NotEmpty(t, problems[0], "serve --check finds the broken runbook")
	for _, p := range problems {
		require.Contains(t, p, filepath.Join(books, "broken.yaml")+":", "each problem is in the broken runbook")
	}
	before := finished(runsOf(t, db, "fresh"))
	require.NoError(t, cmd.Process.Signal(syscall.SIGHUP))
	next("RELOADING=1")
	next("READY=1")
	eventually("the log says the reload failed", func() bool {
		return strings.Contains(logs.String(), "config reload failed: kept the running config, inventory and runbooks")
	})
	text := logs.String()
	for _, p := range problems {
		// The message is quoted in the log; where it is, is not.
		at, _, ok := strings.Cut(p, ": ")
		require.True(t, ok, p)
		require.Contains(t, text, at+": ", "the log names each problem where serve --check does")
	}
	require.Equal(t, "0", metric(t, port, "runbot_config_reload_success"))
	eventually("the schedule the broken config drops still runs", func() bool { return finished(runsOf(t, db, "fresh")) > before+1 })
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", port))
	require.NoError(t, err)
	_ = resp.Body.Close() // only the status matters
	require.Equal(t, http.StatusOK, resp.StatusCode, "runbot still serves")

	// Fixed: the next reload installs the set, and SIGTERM still drains.
	require.NoError(t, os.Remove(filepath.Join(books, "broken.yaml")))
	require.NoError(t, cmd.Process.Signal(syscall.SIGHUP))
	next("RELOADING=1")
	next("READY=1")
	require.Equal(t, "1", metric(t, port, "runbot_config_reload_success"))
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, cmd.Wait(), logs.String())
}

// runsOf lists a runbook's runs, newest first, reading the store as
// another process would.
func runsOf(t *testing.T, db, runbook string) []store.Run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := store.Open(ctx, db)
	require.NoError(t, err)
	defer func() { _ = st.Close() }() // a read-only look; nothing to lose on close
	runs, err := st.ListRuns(ctx, store.RunFilter{Runbook: runbook})
	require.NoError(t, err)
	return runs
}

func getRun(t *testing.T, db, id string) store.Run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := store.Open(ctx, db)
	require.NoError(t, err)
	defer func() { _ = st.Close() }() // a read-only look; nothing to lose on close
	run, err := st.GetRun(ctx, id)
	require.NoError(t, err)
	return run
}

func finished(runs []store.Run) int {
	n := 0
	for _, r := range runs {
		if r.Status.Final() {
			n++
		}
	}
	return n
}

// metric reads one unlabelled metric's value from /metrics.
func metric(t *testing.T, port int, name string) string {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }() // read to the end below
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	for line := range strings.SplitSeq(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return v
		}
	}
	t.Fatalf("no metric %s in /metrics", name)
	return ""
}

// TestSIGHUPReloadsAlertRoutes: a runbook added with an alert trigger
// routes its alert after a reload, as an operator adding a runbook for a
// new alert expects, without a restart.
func TestSIGHUPReloadsAlertRoutes(t *testing.T) {
	r := newRestartRig(t)
	books := t.TempDir()
	sleep, err := os.ReadFile("testdata/restartrunbooks/sleep.yaml")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(books, "sleep.yaml"), sleep, 0o600))
	abs, err := filepath.Abs("testdata")
	require.NoError(t, err)
	cfg, err := os.ReadFile(r.cfg)
	require.NoError(t, err)
	cfg = bytes.Replace(cfg, []byte(abs+"/restartrunbooks"), []byte(books), 1)
	cfg = fmt.Appendf(cfg, "alerts:\n  bearer_token: {env: T_ALERT}\n")
	require.NoError(t, os.WriteFile(r.cfg, cfg, 0o600))
	r.env = []string{"T_ALERT=" + stormToken}
	r.start()
	defer r.stop()

	// Before: no runbook takes StormProbe.
	r.stormAlerts("before", 1)
	nap := strings.Replace(string(sleep), "name: sleep", "name: nap", 1)
	nap = strings.Replace(nap, "triggers:\n  command: sleep", "triggers:\n  command: nap\n  alerts:\n    - match: {alertname: StormProbe}\n      params: {secs: \"0\"}", 1)
	require.NotEqual(t, string(sleep), nap)
	require.NoError(t, os.WriteFile(filepath.Join(books, "nap.yaml"), []byte(nap), 0o600))
	require.NoError(t, r.cmd.Process.Signal(syscall.SIGHUP))
	r.until("the reload is done", func() bool { return strings.Contains(r.logs.String(), "config reloaded") })

	r.stormAlerts("after", 1)
	r.until("the alert after the reload ran the new runbook", func() bool {
		for _, run := range r.allRuns() {
			if run.Runbook == "nap" && run.Status.Final() {
				return true
			}
		}
		return false
	})
	for _, run := range r.allRuns() {
		require.Equal(t, "nap", run.Runbook)
	}
	require.Len(t, r.allRuns(), 1, "the alert before the reload had no route, and was not run later")
}

// TestSIGHUPReloadHidesANewInventorysPassphrase reloads serve with an
// inventory that names a new key passphrase, and a schedule whose command
// prints it: the passphrase is hidden from the first run after the reload
// on, in Slack and in the log, as one named at start is.
func TestSIGHUPReloadHidesANewInventorysPassphrase(t *testing.T) {
	r := newRestartRig(t)
	dir := t.TempDir()
	const passphrase = "reloadpass-5a1e93c7"
	passFile := filepath.Join(dir, "passphrase")
	require.NoError(t, os.WriteFile(passFile, []byte(passphrase+"\n"), 0o600))
	books := filepath.Join(dir, "runbooks")
	require.NoError(t, os.Mkdir(books, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(books, "show.yaml"), []byte(`name: show
params:
  file: {type: string, required: true}
  host: {type: host, default: here}
steps:
  - {id: print, check: command, target: host, with: {cmd: 'cat {{ .params.file }}', extract: {first: '(?m)^(.+)$'}}}
findings:
  - {id: printed, severity: critical, when: 'steps.print.stdout != ""', summary: 'The command printed "{{ .steps.print.values.first }}".'}
`), 0o600))
	abs, err := filepath.Abs("testdata")
	require.NoError(t, err)
	cfg, err := os.ReadFile(r.cfg)
	require.NoError(t, err)
	cfg = bytes.Replace(cfg, []byte(abs+"/restartrunbooks"), []byte(books), 1)
	require.NoError(t, os.WriteFile(r.cfg, cfg, 0o600))
	r.start()
	defer r.stop()

	inv := filepath.Join(dir, "inventory.yaml")
	require.NoError(t, os.WriteFile(inv, fmt.Appendf(nil, `hosts:
  here: {transport: local}
  bastion: {address: 192.0.2.10, user: ops, identity_file: %s/id, passphrase_file: %s}
`, dir, passFile), 0o600))
	cfg = bytes.Replace(cfg, []byte(abs+"/local.yaml"), []byte(inv), 1)
	cfg = fmt.Appendf(cfg, "schedules:\n  - {runbook: show, cron: \"@every 1s\", post: always, params: {file: %s}}\n", passFile)
	require.NoError(t, os.WriteFile(r.cfg, cfg, 0o600))
	require.NoError(t, r.cmd.Process.Signal(syscall.SIGHUP))
	r.until("the reload is done", func() bool { return strings.Contains(r.logs.String(), "config reloaded") })
	var slack strings.Builder
	r.until("a scheduled run posts what its command printed", func() bool {
		slack.Reset()
		for _, c := range r.rec.Calls() {
			fmt.Fprintf(&slack, "%s %v %s\n", c.Method, c.Form, c.Body)
		}
		return strings.Contains(slack.String(), "The command printed")
	})
	require.Contains(t, slack.String(), `The command printed \"[redacted]\"`)
	require.NotContains(t, slack.String(), passphrase, "Slack shows the passphrase the reload named")
	require.NotContains(t, r.logs.String(), passphrase, "the log shows the passphrase the reload named")
}
