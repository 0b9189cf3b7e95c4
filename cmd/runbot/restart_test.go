package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/slackchat/slackrec"
	"github.com/runbot/runbot/store"
)

// restartRig runs the real runbot serve against the recording Slack, killing
// and restarting it on one store.
type restartRig struct {
	t      *testing.T
	runbot string
	rec    *slackrec.Recorder
	cfg    string
	db     string
	port   int
	cmd    *exec.Cmd
	logs   *syncBuffer
	// triggers numbers slash commands, for distinct trigger_ids.
	triggers int
	// env is added to serve's environment, after the rig's own.
	env []string
}

const restartSigning = "restart-signing-secret"

func newRestartRig(t *testing.T) *restartRig {
	t.Helper()
	runbot, _ := buildBinaries(t)
	rec := slackrec.New()
	t.Cleanup(rec.Close)
	dir := t.TempDir()
	abs, err := filepath.Abs("testdata")
	require.NoError(t, err)
	r := &restartRig{t: t, runbot: runbot, rec: rec, db: filepath.Join(dir, "runbot.db"), port: freePort(t), cfg: filepath.Join(dir, "runbot.yaml")}
	cfg := fmt.Sprintf(`
listen: 127.0.0.1:%d
store: %s
inventory: %s/local.yaml
runbooks: [%s/restartrunbooks]
shutdown_grace: 2s
slack:
  mode: http
  bot_token: {env: T_BOT}
  signing_secret: {env: T_SIGN}
  channel: C0OPS
  api_url: %s
  authorize:
    - {runbooks: ["*"], users: [U0REQ]}
`, r.port, r.db, abs, abs, rec.APIURL())
	require.NoError(t, os.WriteFile(r.cfg, []byte(cfg), 0o600))
	return r
}

// start starts runbot serve and waits until it is ready.
func (r *restartRig) start() {
	r.t.Helper()
	r.cmd = exec.Command(r.runbot, "serve", "--config", r.cfg)
	r.cmd.Env = append(append(os.Environ(), "T_BOT=xoxb-test", "T_SIGN="+restartSigning), r.env...)
	r.logs = &syncBuffer{}
	r.cmd.Stdout, r.cmd.Stderr = r.logs, r.logs
	require.NoError(r.t, r.cmd.Start())
	cmd := r.cmd
	r.t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	r.until("runbot is ready", func() bool {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", r.port))
		if err != nil {
			return false
		}
		_ = resp.Body.Close() // only the status matters
		return resp.StatusCode == http.StatusOK
	})
}

// kill ends runbot as a crash does: SIGKILL, nothing cleaned up.
func (r *restartRig) kill() {
	r.t.Helper()
	require.NoError(r.t, r.cmd.Process.Signal(syscall.SIGKILL))
	_ = r.cmd.Wait() // killed: the exit status says so
}

// stop ends runbot as systemd does: SIGTERM, a clean exit.
func (r *restartRig) stop() {
	r.t.Helper()
	require.NoError(r.t, r.cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(r.t, r.cmd.Wait(), r.logs.String())
}

// until polls cond; the deadline only guards against a hung test.
func (r *restartRig) until(what string, cond func() bool) {
	r.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for !cond() {
		require.True(r.t, time.Now().Before(deadline), "%s: gave up waiting; runbot said:\n%s", what, r.logs.String())
		time.Sleep(100 * time.Millisecond)
	}
}

// command sends "/runbot TEXT" as U0REQ, signed as Slack signs it.
func (r *restartRig) command(text string) {
	r.t.Helper()
	r.triggers++
	req, err := slackrec.SignedPost(r.t.Context(), fmt.Sprintf("http://127.0.0.1:%d/slack/commands", r.port), restartSigning, url.Values{
		"team_id": {"T0TEAM"}, "channel_id": {"C0OPS"}, "user_id": {"U0REQ"}, "user_name": {"req"}, "command": {"/runbot"},
		"text": {text}, "trigger_id": {fmt.Sprintf("%d.1.trigger", r.triggers)},
		"response_url": {r.rec.ResponseURL(fmt.Sprintf("cmd-%d", r.triggers))},
	})
	require.NoError(r.t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(r.t, err)
	_ = resp.Body.Close() // the run shows up in the store
	require.Equal(r.t, http.StatusOK, resp.StatusCode)
}

// runs reads the runs of each sleep length, oldest first, as another
// process would.
func (r *restartRig) runs() map[string][]store.Run {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := store.OpenURL(ctx, r.db)
	require.NoError(r.t, err)
	defer func() { _ = st.Close() }() // a read-only look; nothing to lose on close
	all, err := st.ListRuns(ctx, store.RunFilter{Limit: 100})
	require.NoError(r.t, err)
	all = postedRefs(ctx, r.t, st, all)
	out := map[string][]store.Run{}
	for i := len(all) - 1; i >= 0; i-- {
		out[all[i].Params["secs"]] = append(out[all[i].Params["secs"]], all[i])
	}
	return out
}

func (r *restartRig) work(id string) store.Work {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := store.Open(ctx, r.db)
	require.NoError(r.t, err)
	defer func() { _ = st.Close() }() // a read-only look; nothing to lose on close
	w, err := st.GetWork(ctx, id)
	require.NoError(r.t, err)
	return w
}

// says reports whether the newest update of the message at ts holds text.
func (r *restartRig) says(ts, text string) bool {
	last := ""
	for _, c := range r.rec.Calls("chat.update") {
		if c.Status == http.StatusOK && c.Form.Get("ts") == ts {
			last = c.Text()
		}
	}
	return strings.Contains(last, text)
}

// posted reports whether every run has its message.
func posted(runs []store.Run, n int, status store.RunStatus) bool {
	if len(runs) != n {
		return false
	}
	for _, run := range runs {
		if run.Message == nil {
			return false
		}
	}
	return runs[n-1].Status == status
}

// TestRestartsAroundLongRunsNeverRunAStoredRunTwice restarts runbot serve
// three times around runs in flight, killing it as a crash does: once while
// two runs go, once after one of them finished (it outlasts the 30 s record
// deadline) while the other still goes, once while the other goes again.
// A run whose report was stored is never run again; a run cut short runs
// again at most MaxWorkAttempts times in all, and its message says which
// attempt follows or that none does; every run is posted exactly once.
func TestRestartsAroundLongRunsNeverRunAStoredRunTwice(t *testing.T) {
	r := newRestartRig(t)
	const long, short = "120", "31"

	// 1: both runs in flight, then a crash.
	r.start()
	r.command("sleep " + long)
	r.command("sleep " + short)
	r.until("both runs posted", func() bool {
		runs := r.runs()
		return posted(runs[long], 1, store.RunRunning) && posted(runs[short], 1, store.RunRunning)
	})
	r.kill()

	// 2: both run again; the short one finishes and its work is done, then
	// a crash while the long one still goes.
	r.start()
	first := r.runs()
	r.until("interrupted runs' messages updated", func() bool {
		return r.says(first[long][0].Message.ID, "It runs again as attempt 2 of 3") && r.says(first[short][0].Message.ID, "It runs again as attempt 2 of 3")
	})
	r.until("the short run finished", func() bool {
		runs := r.runs()
		if !posted(runs[short], 2, store.RunFinished) || !posted(runs[long], 2, store.RunRunning) {
			return false
		}
		return r.work(runs[short][1].WorkID).State == store.WorkDone && r.says(runs[short][1].Message.ID, "Slept as asked.")
	})
	r.kill()

	// 3: only the long one runs again (its third attempt); a crash.
	r.start()
	second := r.runs()
	r.until("the long run's third attempt posted", func() bool {
		return posted(r.runs()[long], 3, store.RunRunning) && r.says(second[long][1].Message.ID, "It runs again as attempt 3 of 3")
	})
	r.kill()

	// 4: nothing runs again; the last attempt's message says why.
	r.start()
	third := r.runs()
	r.until("the last attempt's message updated", func() bool {
		return r.says(third[long][2].Message.ID, "for the third time. It is not run again")
	})
	// Give a wrongly requeued run the time to show up in the store: the
	// workers start before the process is ready, so one second is plenty.
	time.Sleep(time.Second)
	r.stop()

	runs := r.runs()
	require.Len(t, runs[long], store.MaxWorkAttempts, "the long run ran once per attempt")
	require.Len(t, runs[short], 2, "the short run ran until its report was stored, never after")
	for _, run := range runs[long] {
		require.Equal(t, store.RunInterrupted, run.Status)
	}
	require.Equal(t, store.RunInterrupted, runs[short][0].Status)
	done := runs[short][1]
	require.Equal(t, store.RunFinished, done.Status)
	require.NotEmpty(t, done.Report)
	require.Greater(t, done.FinishedAt.Sub(done.StartedAt), 30*time.Second, "the run outlasted the record deadline")
	require.True(t, r.says(done.Message.ID, "1 of 1 step runs completed."), "the finished run's message shows its result")

	lw, sw := r.work(runs[long][0].WorkID), r.work(done.WorkID)
	require.Equal(t, store.WorkDone, lw.State)
	require.Equal(t, store.MaxWorkAttempts, lw.Attempts)
	require.Equal(t, store.WorkDone, sw.State)
	require.Equal(t, 2, sw.Attempts)

	// Every run posted exactly once, as a new message; everything else
	// was an update of one of them (or a reply in its thread).
	var top []slackrec.Call
	for _, c := range r.rec.Calls("chat.postMessage") {
		if c.Form.Get("thread_ts") == "" {
			top = append(top, c)
		}
	}
	require.Len(t, top, store.MaxWorkAttempts+2, "one post per run")
	seen := map[string]bool{}
	for _, run := range append(runs[long], runs[short]...) {
		require.NotNil(t, run.Message)
		require.False(t, seen[run.Message.ID], "two runs on one message")
		seen[run.Message.ID] = true
	}
	for _, c := range r.rec.Calls("chat.update") {
		require.True(t, seen[c.Form.Get("ts")], "an update of a message no run posted")
	}
	t.Logf("runs: %d, posts: %d, updates: %d, thread replies: %d", len(seen), len(top), len(r.rec.Calls("chat.update")),
		len(r.rec.Calls("chat.postMessage"))-len(top))
}
