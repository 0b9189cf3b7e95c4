package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/slackchat/slackrec"
)

// buildBinaries builds runbot and sglang-sim the way make build does.
func buildBinaries(tb testing.TB) (runbot, sim string) {
	tb.Helper()
	dir := tb.TempDir()
	runbot, sim = filepath.Join(dir, "runbot"), filepath.Join(dir, "sglang-sim")
	for bin, pkg := range map[string]string{runbot: ".", sim: "../sglang-sim"} {
		out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput()
		require.NoError(tb, err, string(out))
	}
	return runbot, sim
}

// TestDemoRunsEveryStage runs `runbot demo --yes` as make demo does and
// checks each stage's outcome in its output.
func TestDemoRunsEveryStage(t *testing.T) {
	runbot, sim := buildBinaries(t)
	// With a Slack token and channel set, the demo also posts its messages;
	// here Slack is slack-go's test server.
	rec := slackrec.New()
	t.Cleanup(rec.Close)
	var out bytes.Buffer
	state := t.TempDir()
	cmd := exec.Command(runbot, "demo", "--sim", sim, "--yes")
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+state, "SLACK_BOT_TOKEN=xoxb-demo", "SLACK_CHANNEL=C0DEMO", "SLACK_API_URL="+rec.APIURL())
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Run(), out.String())
	text := out.String()
	for _, want := range []string{
		"[1/7]", "✔ up in",
		"[2/7]", "✔ decode is running batches",
		"[3/7]", "✔ decode is wedged; /health still says 200",
		"[4/7]", "✔ diagnosed pd_transfer_wedge",
		"This is what runbot posts to Slack", "PD transfer wedge", "+  --disable-overlap-schedule \\",
		"[ Approve ]", "[ Deny ]", "[ Dry-run diff ]",
		"[5/7]", "✔ approved by demo-oncall",
		"[6/7]", "✔ recovered: verified: the symptom is gone",
		"[7/7]", "✔ same burst, no wedge: diagnosis healthy",
		"Demo finished",
	} {
		require.Contains(t, text, want)
	}
	require.Equal(t, 2, strings.Count(text, "--disable-overlap-schedule \\"), "the diff adds the flag to both serve scripts")

	// The store it names is there afterwards, with the demo's runs.
	db := filepath.Join(state, "runbot", "demo.db")
	// The hint is pasted as printed: the binary it names runs from here
	// (runbot itself is on no $PATH in this test).
	hint := regexp.MustCompile(`The demo's runs and audit trail are kept in (\S+): (\S+) history --store (\S+)\n`).FindStringSubmatch(text)
	require.NotNil(t, hint, text)
	require.Equal(t, []string{db, runbot, db}, hint[1:])
	hist, err := exec.Command(hint[2], "history", "--store", hint[3]).CombinedOutput()
	require.NoError(t, err, "%s", hist)
	require.Contains(t, string(hist), "sglang-pd-wedge")

	posts := rec.Calls("chat.postMessage")
	require.Len(t, posts, 2, "the diagnosis and the outcome go to Slack")
	require.Equal(t, "C0DEMO", posts[0].Form.Get("channel"))
	require.Contains(t, posts[0].Text(), "PD transfer wedge")
	require.Contains(t, posts[1].Text(), "verified: the symptom is gone")
}

// TestDemoDeclinedChangesNothing: without --yes and with "n" at the prompt,
// the demo stops before applying, and cleans up.
func TestDemoDeclinedChangesNothing(t *testing.T) {
	runbot, sim := buildBinaries(t)
	var out bytes.Buffer
	cmd := exec.Command(runbot, "demo", "--sim", sim)
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+t.TempDir())
	cmd.Stdin = strings.NewReader("n\n")
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	require.Error(t, err)
	require.Contains(t, out.String(), "not approved; nothing was changed")
	require.NotContains(t, out.String(), "[6/7]")
}

// TestDemoWithoutTerminalSaysHowToApprove: with stdin not a terminal and
// nothing on it (CI, make demo in a script), the demo says at once that
// it cannot ask, and stops at the approval naming --yes and make's ARGS,
// having changed nothing; make demo passes ARGS on.
func TestDemoWithoutTerminalSaysHowToApprove(t *testing.T) {
	runbot, sim := buildBinaries(t)
	cmd := exec.Command(runbot, "demo", "--sim", sim) // stdin is /dev/null
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	require.Error(t, err)
	text := string(out)
	require.True(t, strings.HasPrefix(text, "stdin is not a terminal: the approval will be read from it; to approve without asking, pass --yes (make demo ARGS=--yes)\n"), text)
	require.Contains(t, text, "no answer to the approval prompt (stdin is not a terminal?); nothing was changed: approve without asking with --yes (make demo ARGS=--yes)")
	require.NotContains(t, text, "[6/7]")

	dry, err := exec.Command("make", "-C", "../..", "-n", "demo", "ARGS=--yes").CombinedOutput()
	require.NoError(t, err, "%s", dry)
	require.Regexp(t, `(?m)^bin/runbot demo --sim bin/sglang-sim --yes$`, string(dry))
}
