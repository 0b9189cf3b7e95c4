package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/runbooks/fleet"
	"github.com/runbot/runbot/slackchat/slackrec"
	"github.com/runbot/runbot/store"
)

// runRunbot runs the runbot binary and returns its stdout, stderr and exit
// code.
func runRunbot(t *testing.T, runbot string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(runbot, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if err != nil {
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, stderr.String())
		code = exit.ExitCode()
	}
	return stdout.String(), stderr.String(), code
}

// A fleet run covers every deployment once, records each run, reports the
// deployment that lacks the runbook's role as not run instead of failing
// the rest, and exits with the worst outcome.
func TestRunAllDeployments(t *testing.T) {
	runbot, _ := buildBinaries(t)
	db := t.TempDir() + "/runbot.db"
	rb, inv := "testdata/fleet/app-check.yaml", "testdata/fleet/inventory.yaml"

	out, stderr, code := runRunbot(t, runbot, "run", rb, "-i", inv, "--all-deployments", "--parallel", "2", "--format", "json", "--store", db)
	require.Equal(t, exitCritical, code, stderr)
	var doc fleet.Doc
	require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
	require.Equal(t, "app-check", doc.Runbook)
	require.Equal(t, 2, doc.Parallel)
	got := map[string]fleet.Result{}
	var order []string
	for _, r := range doc.Runs {
		got[r.Deployment] = r
		order = append(order, r.Deployment)
	}
	require.Equal(t, []string{"batch-1", "web-a", "web-b", "web-broken"}, order, "every deployment once, by name")
	require.Equal(t, []string{"app_up"}, got["web-a"].Diagnoses)
	require.Equal(t, []string{"app_up"}, got["web-b"].Diagnoses)
	require.Equal(t, []string{"app_down"}, got["web-broken"].Diagnoses)
	require.Contains(t, got["batch-1"].Error, "app", "the deployment without the role says why it was not run")
	require.Empty(t, got["batch-1"].RunID)

	hist, _, code := runRunbot(t, runbot, "history", "--format", "json", "--store", db)
	require.Zero(t, code)
	var runs []map[string]any
	require.NoError(t, json.Unmarshal([]byte(hist), &runs), hist)
	require.Len(t, runs, 3, "each run that ran is recorded")
	for _, name := range []string{"web-a", "web-b", "web-broken"} {
		_, _, code := runRunbot(t, runbot, "show", got[name].RunID, "--store", db)
		require.Zero(t, code, "run of %s is in the store", name)
	}

	// The text summary counts the deployments that ran, and says how many
	// selected ones could not.
	out, stderr, code = runRunbot(t, runbot, "run", rb, "-i", inv, "--all-deployments", "--store", db)
	require.Equal(t, exitCritical, code, stderr)
	require.Contains(t, out, "app-check on 3 deployments, 4 at a time, in ")
	require.Contains(t, out, "; 1 more selected could not be run\n")
	require.Regexp(t, `(?m)^batch-1 +not run +`, out)

	// A glob selects; the text summary has one row per deployment.
	out, stderr, code = runRunbot(t, runbot, "run", rb, "-i", inv, "--deployments", "web-[ab]", "--store", db)
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, out, "app-check on 2 deployments, 4 at a time")
	require.Regexp(t, `(?m)^web-a +ok +app_up `, out)
	require.Regexp(t, `(?m)^web-b +ok +app_up `, out)
	require.NotContains(t, out, "web-broken")
}

// Bad input for a fleet run is refused before anything runs: one line,
// exit 1, nothing recorded.
func TestRunAllDeploymentsBadInput(t *testing.T) {
	runbot, _ := buildBinaries(t)
	db := t.TempDir() + "/runbot.db"
	rb, inv := "testdata/fleet/app-check.yaml", "testdata/fleet/inventory.yaml"
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"deployment given", []string{"-p", "deployment=web-a", "--all-deployments"}, "--param deployment: a fleet run sets it per deployment"},
		{"no match", []string{"--deployments", "db-*"}, `has no deployment matching "db-*"`},
		{"bad glob", []string{"--deployments", "web-["}, `--deployments "web-[": syntax error in pattern`},
		{"bad param", []string{"--all-deployments", "-p", "marker=NOT OK"}, "param marker"},
		{"remediate", []string{"--all-deployments", "--remediate"}, "not a fleet run"},
		{"parallel", []string{"--all-deployments", "--parallel", "0"}, "--parallel 0: want 1 to 256"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, stderr, code := runRunbot(t, runbot, append([]string{"run", rb, "-i", inv, "--store", db}, c.args...)...)
			require.Equal(t, exitBadInput, code, stderr)
			msg := strings.TrimSpace(stderr)
			require.Contains(t, msg, c.want)
			require.Equal(t, 1, strings.Count(msg, "\n")+1, "one line: %q", msg)
			require.Empty(t, out)
		})
	}
	hist, _, _ := runRunbot(t, runbot, "history", "--format", "json", "--store", db)
	var runs []map[string]any
	require.NoError(t, json.Unmarshal([]byte(hist), &runs), hist)
	require.Empty(t, runs, "bad input records no run")
}

// A fleet schedule in serve's config audits every deployment that has the
// runbook's role on each firing, records one run per deployment, and posts
// one Slack message for the first firing (the baseline) and none for the
// firings after it, where nothing changed.
func TestServeFleetSchedule(t *testing.T) {
	runbot, _ := buildBinaries(t)
	rec := slackrec.New()
	t.Cleanup(rec.Close)
	dir := t.TempDir()
	db := filepath.Join(dir, "runbot.db")
	abs, err := filepath.Abs("testdata/fleet")
	require.NoError(t, err)
	cfg := fmt.Sprintf(`
listen: 127.0.0.1:%d
store: %s
inventory: %s/inventory.yaml
runbooks: [%s/app-check.yaml]
slack:
  mode: http
  bot_token: {env: T_BOT}
  signing_secret: {env: T_SIGN}
  channel: C0OPS
  api_url: %s
schedules:
  - {runbook: app-check, cron: "@every 1s", deployments: all, parallel: 2}
`, freePort(t), db, abs, abs, rec.APIURL())
	path := filepath.Join(dir, "runbot.yaml")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o600))
	cmd := exec.Command(runbot, "serve", "--config", path)
	cmd.Env = append(os.Environ(), "T_BOT=xoxb-test", "T_SIGN=secret")
	logs := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill() }()

	// Three firings: web-a, web-b and web-broken each three times; batch-1
	// lacks the app role and is left out.
	deadline := time.Now().Add(60 * time.Second)
	for finishedRuns(t, db) < 9 {
		require.True(t, time.Now().Before(deadline), "three firings did not finish:\n%s", logs.String())
		time.Sleep(100 * time.Millisecond)
	}
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait() // killed on purpose

	var posts []string
	for _, c := range rec.Calls("chat.postMessage") {
		posts = append(posts, c.Form.Get("text")+" "+c.Form.Get("blocks"))
	}
	require.Len(t, posts, 1, "one message for the baseline, none for the unchanged firings:\n%s", logs.String())
	require.Contains(t, posts[0], "first audit of 3 deployment(s), 1 not ok")
	require.Contains(t, posts[0], "web-broken: first audit")
	require.Contains(t, posts[0], "web-a, web-b")
	require.NotContains(t, posts[0], "batch-1")
}

// finishedRuns counts the scheduled runs that finished, reading the store
// as another process would.
func finishedRuns(t *testing.T, db string) int {
	t.Helper()
	if _, err := os.Stat(db); err != nil {
		return 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := store.Open(ctx, db)
	require.NoError(t, err)
	defer func() { _ = st.Close() }() // a read-only look; nothing to lose on close
	runs, err := st.ListRuns(ctx, store.RunFilter{Trigger: store.TriggerSchedule, Status: store.RunFinished, Limit: 1000})
	require.NoError(t, err)
	return len(runs)
}
