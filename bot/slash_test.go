package bot

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/dispatch"
	"github.com/runbot/runbot/store"
)

func TestSlashCommandRunsRunbookAndPostsDiagnosis(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	run, ts := h.runOnce("")

	require.Equal(t, store.RunFinished, run.Status)
	require.Equal(t, store.OutcomeCritical, run.Outcome)
	require.Equal(t, requester, run.RequestedBy)
	require.Equal(t, store.TriggerSlack, run.Trigger)
	require.Equal(t, opsChan, run.Message.Channel)

	posts := h.rec.Calls("chat.postMessage")
	require.Len(t, posts, 1)
	require.Equal(t, opsChan, posts[0].Form.Get("channel"))
	require.Equal(t, botToken, posts[0].Form.Get("token"))
	first := posts[0].Text()
	require.Contains(t, first, ":hourglass_flowing_sand: Stuck worker")
	require.Contains(t, first, run.ID)

	final := h.lastMessage(ts)
	text := final.Text()
	for _, want := range []string{
		":red_circle: Stuck worker",
		"Diagnosis: The worker is wedged while its health check passes; a restart clears it.",
		"Health says 200 but the worker made no progress for 600s.",
		"[health@host] `echo status=200` exited 0",
		"[progress@host] gap = 600",
		"Proposed remediation: restart on host/here",
		"needs 2 approval(s) from @oncall; two-person rule",
		"<@" + requester + ">",
	} {
		require.Contains(t, text, want)
	}
	value := buttonValue(t, final, dispatch.ActionApprove)
	plans, err := h.store.ListPlans(t.Context(), store.PlanFilter{RunID: run.ID})
	require.NoError(t, err)
	require.Len(t, plans, 1)
	require.Equal(t, store.PlanProposed, plans[0].State)
	require.Equal(t, plans[0].ID+"|"+plans[0].Hash, value, "the button carries the plan id and the hash shown")
	require.Equal(t, value, buttonValue(t, final, dispatch.ActionDeny))
	require.Equal(t, value, buttonValue(t, final, dispatch.ActionDryRun))
	require.LessOrEqual(t, len(final.Blocks()), maxBlocks)
	require.Zero(t, h.appliedCount(), "nothing is applied without approval")
}

func TestCommandErrorsAreEphemeralAndRunNothing(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, user, channel, text string
		want                      []string
	}{
		{"unknown runbook", requester, opsChan, "run stuck-wroker", []string{`unknown runbook "stuck-wroker" (did you mean "stuck-worker"?)`}},
		{"unknown command", requester, opsChan, "stcuk here /tmp", []string{`Unknown command "stcuk" (did you mean "stuck"?)`}},
		{"runbook name as command", requester, opsChan, "stuck-worker here", []string{`"stuck-worker" is a runbook; run it with`}},
		{"unknown param", requester, opsChan, "run stuck-worker host=here dir=/tmp nte=x", []string{`param nte: no such param (did you mean "note"?)`}},
		{"missing param", requester, opsChan, "run stuck-worker host=here", []string{"param dir: is required (the worker's state directory)", "Usage: `/runbot stuck HOST DIR`"}},
		{"unknown host", requester, opsChan, "stuck nohost /tmp", []string{`unknown host "nohost"`}},
		{"hostile host", requester, opsChan, `stuck "here; rm -rf /" /tmp`, []string{"want a host name"}},
		{"extra argument", requester, opsChan, "stuck here /tmp surplus", []string{`unexpected argument "surplus"`}},
		{"given twice", requester, opsChan, "stuck here /tmp host=here", []string{"host is given twice"}},
		{"unterminated quote", requester, opsChan, `stuck here "/tmp`, []string{"a quote is not closed"}},
		{"stranger", stranger, opsChan, "stuck here /tmp", []string{"You may not run stuck-worker in this channel"}},
		{"run without runbook", requester, opsChan, "run", []string{"Which runbook?", "stuck-worker"}},
	}
	h := newHarness(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			text := replyText(t, h.commandIn(tc.user, tc.channel, tc.text))
			for _, w := range tc.want {
				require.Contains(t, text, w)
			}
			require.Contains(t, text, ":x:")
		})
	}
	h.idle()
	runs, err := h.store.ListRuns(t.Context(), store.RunFilter{})
	require.NoError(t, err)
	require.Empty(t, runs)
	require.Empty(t, h.rec.Calls("chat.postMessage"))
}

func TestAccessRulesByChannelAndSlackUserGroup(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) {
		c.Access = []AccessRule{
			{Runbooks: []string{"stuck-worker"}, SlackGroups: []string{"S0SRE"}, Channels: []string{opsChan}},
		}
	})
	h.rec.SetUserGroup("S0SRE", stranger)

	text := replyText(t, h.commandIn(stranger, "C0OTHER", "stuck here "+h.dir))
	require.Contains(t, text, "You may not run stuck-worker in this channel")
	text = replyText(t, h.commandIn(requester, opsChan, "stuck here "+h.dir))
	require.Contains(t, text, "You may not run stuck-worker", "the oncall group has no rule here")
	text = replyText(t, h.commandIn(stranger, opsChan, "stuck here "+h.dir))
	require.Contains(t, text, "Starting stuck-worker")
	h.idle()
	runs, err := h.store.ListRuns(t.Context(), store.RunFilter{})
	require.NoError(t, err)
	require.Len(t, runs, 1)
	require.Equal(t, stranger, runs[0].RequestedBy)
}

func TestHostileTextIsData(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	pwned := filepath.Join(h.dir, "pwned")
	note := fmt.Sprintf(`note="$(touch %s) <!channel> & *bold*"`, pwned)
	_, ts := h.runOnce(note)
	_, err := os.Stat(pwned)
	require.True(t, os.IsNotExist(err), "the note was executed")

	final := h.lastMessage(ts)
	text := final.Text()
	require.NotContains(t, text, "<!channel>", "untrusted text became a channel ping")
	require.Contains(t, text, "&lt;!channel&gt; &amp; *bold*")
	require.Contains(t, text, "$(touch "+pwned+")")
}

func TestRepeatedTriggerStartsOneRun(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	form := h.commandForm(requester, opsChan, "stuck here "+h.dir)
	first := replyText(t, h.postCommand(form, nil))
	require.Contains(t, first, "Starting stuck-worker")
	again := replyText(t, h.postCommand(form, http.Header{"X-Slack-Retry-Num": {"1"}, "X-Slack-Retry-Reason": {"http_timeout"}}))
	require.True(t, strings.Contains(again, "already queued") || strings.Contains(again, "already running"), again)
	h.idle()
	runs, err := h.store.ListRuns(t.Context(), store.RunFilter{})
	require.NoError(t, err)
	require.Len(t, runs, 1)
	require.Len(t, h.rec.Calls("chat.postMessage"), 1)
}

func TestHelpListExplainStatusHistory(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	help := replyText(t, h.command(requester, ""))
	require.Contains(t, help, "/runbot stuck HOST DIR  Stuck worker")
	require.Contains(t, help, "/runbot basics HOST  Host basics", "built-in runbooks are listed too")
	require.Equal(t, help, replyText(t, h.command(requester, "help")))

	list := replyText(t, h.command(requester, "list"))
	require.Contains(t, list, "stuck-worker: Stuck worker. `/runbot stuck HOST DIR` or `/runbot run stuck-worker host=… dir=… [key=value …]`")

	explain := replyText(t, h.command(requester, "explain stuck-worker host=here dir=/srv/w"))
	require.Contains(t, explain, "dir (string, required): the worker's state directory")
	require.Contains(t, explain, "progress: command on host")
	require.Contains(t, explain, "diagnosis worker_wedged when findings.alive_not_working, proposes restart")
	require.Contains(t, explain, "approval by @oncall, two-person rule")
	require.Contains(t, explain, "run on here: printf")
	require.Contains(t, explain, "/srv/w/fixed")
	require.Empty(t, h.rec.Calls("chat.postMessage"), "explain runs nothing")

	require.Contains(t, replyText(t, h.command(requester, "status")), "Nothing is running")
	require.Contains(t, replyText(t, h.command(requester, "history")), "No runs yet")

	run, _ := h.runOnce("")
	status := replyText(t, h.command(requester, "status "+run.ID[:len(run.ID)-2]))
	require.Contains(t, status, "Health says 200 but the worker made no progress for 600s.")
	require.Contains(t, status, "*Status:* finished")
	history := replyText(t, h.command(requester, "history"))
	require.Contains(t, history, run.ID+" stuck-worker: critical")
	require.Contains(t, replyText(t, h.command(requester, "status r-nope")), `No run "r-nope"`)
}
