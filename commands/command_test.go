package commands

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/chat"
	"github.com/runbot/runbot/dispatch"
	"github.com/runbot/runbot/runbooks/engine"
	"github.com/runbot/runbot/store"
)

func TestCommandErrorsAreEphemeralAndRunNothing(t *testing.T) { //nolint:tparallel // the cases share one harness and count what it ran, in order
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
			reply := h.commandIn(tc.user, tc.channel, tc.text)
			for _, w := range tc.want {
				require.Contains(t, reply.Text(), w)
			}
			require.Equal(t, chat.StatusError, reply.Status)
		})
	}
	h.idle()
	runs, err := h.store.ListRuns(t.Context(), store.RunFilter{})
	require.NoError(t, err)
	require.Empty(t, runs)
	require.Empty(t, h.rec.Posts())
}

func TestAccessRulesByChannelAndChatUserGroup(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) {
		c.Access = []AccessRule{
			{Runbooks: []string{"stuck-worker"}, UserGroups: []string{"S0SRE"}, Channels: []string{opsChan}},
		}
	})
	h.rec.SetUserGroup("S0SRE", stranger)

	text := h.commandIn(stranger, "C0OTHER", "stuck here "+h.dir).Text()
	require.Contains(t, text, "You may not run stuck-worker in this channel")
	text = h.commandIn(requester, opsChan, "stuck here "+h.dir).Text()
	require.Contains(t, text, "You may not run stuck-worker", "the oncall group has no rule here")
	text = h.commandIn(stranger, opsChan, "stuck here "+h.dir).Text()
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
	// The note reaches the chat as plain text, exactly as typed: never
	// markup. A platform escapes plain text when it renders it (Slack's
	// hostile golden in its Block Kit tests), so it cannot ping anyone.
	require.Contains(t, final.Facts, chat.Fact{Label: "Params", Text: "dir=" + h.dir + " host=here note=$(touch " + pwned + ") <!channel> & *bold*", Code: true})
}

func TestRepeatedTriggerStartsOneRun(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	// The platform delivers the same command twice (Slack retries when
	// its first delivery seemed to go unanswered).
	c := h.commandOf(requester, opsChan, "stuck here "+h.dir)
	first := h.cmds.Command(t.Context(), c).Text()
	require.Contains(t, first, "Starting stuck-worker")
	again := h.cmds.Command(t.Context(), c).Text()
	require.True(t, strings.Contains(again, "already queued") || strings.Contains(again, "already running"), again)
	h.idle()
	runs, err := h.store.ListRuns(t.Context(), store.RunFilter{})
	require.NoError(t, err)
	require.Len(t, runs, 1)
	require.Len(t, h.rec.Posts(), 1)

	// Delivered once more after its run ended: the answer says where the
	// run is, not that it runs.
	late := h.cmds.Command(t.Context(), c).Text()
	require.Contains(t, late, "stuck-worker already ran for this command")
	require.Contains(t, late, runs[0].ID)
	require.NotContains(t, late, "already running")
	require.Len(t, h.rec.Posts(), 1, "and it does not run again")
}

func TestHelpListExplainStatusHistory(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	help := h.command(requester, "").Text()
	require.Contains(t, help, "/runbot stuck HOST DIR  Stuck worker")
	require.Contains(t, help, "/runbot basics HOST  Host basics", "built-in runbooks are listed too")
	require.Equal(t, help, h.command(requester, "help").Text())

	list := h.command(requester, "list").Text()
	require.Contains(t, list, "stuck-worker: Stuck worker. `/runbot stuck HOST DIR` or `/runbot run stuck-worker host=… dir=… [key=value …]`")

	explain := h.command(requester, "explain stuck-worker host=here dir=/srv/w").Text()
	require.Contains(t, explain, "dir (string, required): the worker's state directory")
	require.Contains(t, explain, "progress: command on host")
	require.Contains(t, explain, "diagnosis worker_wedged when findings.alive_not_working, proposes restart")
	require.Contains(t, explain, "approval by @oncall, two-person rule")
	require.Contains(t, explain, "run on here: printf")
	require.Contains(t, explain, "/srv/w/fixed")
	require.Empty(t, h.rec.Posts(), "explain runs nothing")

	require.Contains(t, h.command(requester, "status").Text(), "Nothing is running")
	require.Contains(t, h.command(requester, "history").Text(), "No runs yet")

	run, _ := h.runOnce("")
	status := h.command(requester, "status "+run.ID[:len(run.ID)-2]).Text()
	require.Contains(t, status, "Health says 200 but the worker made no progress for 600s.")
	require.Contains(t, status, "Status: finished")
	history := h.command(requester, "history").Text()
	require.Contains(t, history, run.ID+" stuck-worker: critical")
	require.Contains(t, h.command(requester, "status r-nope").Text(), `No run "r-nope"`)
}

// Access rules that cannot mean what was meant are refused before runbot
// starts, each with what is wrong.
func TestConfigRefusesMistakes(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"unknown group", Config{Access: []AccessRule{{Runbooks: []string{"*"}, Groups: []string{"nope"}}}}, `access rule 1: unknown group "nope"`},
		{"no runbooks", Config{Access: []AccessRule{{Users: []string{requester}}}}, `access rule 1: runbooks is required`},
		{"nobody", Config{Access: []AccessRule{{Runbooks: []string{"*"}}}}, "access rule 1: name users, groups or user groups"},
		{"command without slash", Config{Command: "runbot"}, `command "runbot" must start with /`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := New(tc.cfg, h.disp, Deps{TriggerDeps: dispatch.TriggerDeps{Store: h.store}, Engine: &engine.Engine{}})
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// rearm needs a deployment and a diagnosis, and says when there is no
// open breaker to re-arm; the re-arm itself is the Remediator's (its
// tests in runbooks cover who may and what it changes).
func TestRearmAnswers(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	usage := h.cmds.Command(t.Context(), h.commandOf(requester, opsChan, "rearm dsv4")).Text()
	require.Contains(t, usage, "rearm DEPLOYMENT DIAGNOSIS")
	none := h.cmds.Command(t.Context(), h.commandOf(requester, opsChan, "rearm dsv4 decode_hung")).Text()
	require.Contains(t, none, "Nothing to re-arm: no failed fix for decode_hung on dsv4 keeps the breaker open.")
	require.Contains(t, h.cmds.Command(t.Context(), h.commandOf(requester, opsChan, "help")).Text(), "rearm DEPLOYMENT DIAGNOSIS")
}
