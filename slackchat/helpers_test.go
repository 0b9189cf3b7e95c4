package slackchat

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/commands"
	"github.com/runbot/runbot/dispatch"
	"github.com/runbot/runbot/internal/syncbuf"
	"github.com/runbot/runbot/inventory"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/bind"
	"github.com/runbot/runbot/runbooks/catalog"
	"github.com/runbot/runbot/runbooks/engine"
	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/slackchat/slackrec"
	"github.com/runbot/runbot/store"
)

// Slack users and channels of the tests. U0REQ, U0AAA and U0BBB are in the
// oncall group, which may run every runbook and approve the test
// remediation; U0XXX is a stranger.
const (
	requester = "U0REQ"
	approverA = "U0AAA"
	approverB = "U0BBB"
	stranger  = "U0XXX"
	opsChan   = "C0OPS"

	botToken      = "xoxb-test-0000000000-secret-bot-token"
	signingSecret = "8f742231b10e8888abcd99yyyzzz85a5"
)

// testGroups are the runbot groups of the tests: the oncall group may run
// every runbook and approves the test remediation.
var testGroups = remediation.Groups{"oncall": {requester, approverA, approverB}}

// harness is runbot in Slack wired to real parts, as serve wires it: the
// SQLite store in a temp file, the dispatch core running the runbook
// engine on this machine, the chat commands, the Slack platform, and the
// fake Slack Web API of slackrec. Requests reach it over real HTTP,
// signed as Slack signs them.
type harness struct {
	t     *testing.T
	rec   *slackrec.Recorder
	slack *Slack
	disp  *dispatch.Dispatcher
	bot   *Receiver
	srv   *httptest.Server
	store *store.SQLite
	// dir is the stuck-worker's state directory.
	dir  string
	logs *syncbuf.Buffer
	now  func() time.Time
	// draw, when set (withTimeline), renders the timeline picture.
	draw dispatch.TimelineFunc
	// triggers numbers trigger ids.
	triggers atomic.Int64
}

func writeSecret(t *testing.T, name, value string) SecretRef {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(value+"\n"), 0o600))
	return SecretRef{File: path}
}

func testConfig(t *testing.T, rec *slackrec.Recorder) Config {
	t.Helper()
	return Config{
		Transport:     TransportHTTP,
		BotToken:      writeSecret(t, "bot-token", botToken),
		SigningSecret: writeSecret(t, "signing-secret", signingSecret),
		APIURL:        rec.APIURL(),
	}
}

func newHarness(t *testing.T, tweak ...func(*Config)) *harness {
	t.Helper()
	return newHarnessWith(t, "testdata/runbooks", tweak...)
}

// newHarnessWith is newHarness with the runbooks of another directory.
func newHarnessWith(t *testing.T, runbookDir string, tweak ...func(*Config)) *harness {
	t.Helper()
	rec := slackrec.New()
	t.Cleanup(rec.Close)
	cfg := testConfig(t, rec)
	for _, f := range tweak {
		f(&cfg)
	}
	h := &harness{t: t, rec: rec, dir: t.TempDir(), logs: &syncbuf.Buffer{}, now: time.Now}
	st, err := store.Open(t.Context(), filepath.Join(t.TempDir(), "runbot.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	h.store = st
	cat, problems, err := catalog.Load(runbookDir)
	require.NoError(t, err)
	require.Empty(t, problems)
	inv, err := inventory.Load("testdata/inventory.yaml")
	require.NoError(t, err)
	eng := &engine.Engine{Targets: &bind.InventoryTargets{Inventory: inv, Runners: bind.LocalRunners{}}}
	rem := &remediation.Remediator{Engine: eng, Store: st, Catalog: cat, Groups: testGroups}
	logger := slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h.slack, err = New(cfg, logger, nil)
	require.NoError(t, err)
	rem.Directory = h.slack.Approvers() // as runbot serve does
	// Updates fast enough for tests; the coalescing itself is tested with
	// synctest in live_test.go.
	h.disp, err = dispatch.New(dispatch.Config{Channel: opsChan, UpdateInterval: 20 * time.Millisecond}, dispatch.Deps{
		Catalog: cat, Engine: eng, Remediator: rem, Store: st, Chat: h.slack, Logger: logger,
		Redactor: h.slack.Redactor(),
		Timeline: func(rep *runbooks.Report) ([]byte, error) {
			if h.draw == nil {
				return nil, nil
			}
			return h.draw(rep)
		},
	})
	require.NoError(t, err)
	cmds, err := commands.New(commands.Config{
		Groups: testGroups, Access: []commands.AccessRule{{Runbooks: []string{"*"}, Groups: []string{"oncall"}}},
	}, h.disp, commands.Deps{TriggerDeps: dispatch.TriggerDeps{Store: st, Logger: logger}, Engine: eng, Replier: h.slack, UserGroups: h.slack})
	require.NoError(t, err)
	h.bot, err = NewReceiver(h.slack, cmds)
	require.NoError(t, err)
	h.srv = httptest.NewServer(h.bot.Handler())
	t.Cleanup(h.srv.Close)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, h.disp.Shutdown(ctx))
		// Nothing secret ever reaches the logs.
		require.NotContains(t, h.logs.String(), botToken)
		require.NotContains(t, h.logs.String(), signingSecret)
	})
	return h
}

// signed builds a request signed exactly as Slack signs it.
func signed(t *testing.T, url string, body []byte, ts time.Time, secret string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	require.NoError(t, err)
	stamp := strconv.FormatInt(ts.Unix(), 10)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Slack-Request-Timestamp", stamp)
	req.Header.Set("X-Slack-Signature", sign([]byte(secret), stamp, body))
	return req
}

func (h *harness) do(req *http.Request) (*http.Response, []byte) {
	h.t.Helper()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(h.t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(h.t, err)
	require.NoError(h.t, resp.Body.Close())
	return resp, body
}

// commandForm is a slash command's form as Slack sends it.
func (h *harness) commandForm(user, channel, text string) url.Values {
	id := h.triggers.Add(1)
	return url.Values{
		"token": {"deprecated-verification-token"}, "team_id": {"T0TEAM"}, "team_domain": {"example"},
		"channel_id": {channel}, "channel_name": {"ops"}, "user_id": {user}, "user_name": {strings.ToLower(user)},
		"command": {"/runbot"}, "text": {text}, "api_app_id": {"A0APP"},
		"response_url": {h.rec.ResponseURL(fmt.Sprintf("cmd-%d", id))},
		"trigger_id":   {fmt.Sprintf("%d.1.trigger", id)},
	}
}

// command posts a signed slash command and returns its immediate reply.
// reply is a slash command's immediate reply as Slack receives it.
type reply struct {
	ResponseType string          `json:"response_type"`
	Text         string          `json:"text"`
	Blocks       json.RawMessage `json:"blocks"`
}

func (h *harness) command(user, text string) reply {
	h.t.Helper()
	return h.commandIn(user, opsChan, text)
}

func (h *harness) commandIn(user, channel, text string) reply {
	h.t.Helper()
	return h.postCommand(h.commandForm(user, channel, text), nil)
}

func (h *harness) postCommand(form url.Values, header http.Header) reply {
	h.t.Helper()
	req := signed(h.t, h.srv.URL+"/slack/commands", []byte(form.Encode()), h.now(), signingSecret)
	for k, v := range header {
		req.Header[k] = v
	}
	resp, body := h.do(req)
	require.Equal(h.t, http.StatusOK, resp.StatusCode, string(body))
	var r reply
	require.NoError(h.t, json.Unmarshal(body, &r), string(body))
	require.Equal(h.t, "ephemeral", r.ResponseType)
	return r
}

// replyText is every text of a reply, for "it says X" assertions.
func replyText(t *testing.T, r reply) string {
	t.Helper()
	return slackrec.Call{Form: url.Values{"text": {r.Text}, "blocks": {string(r.Blocks)}}}.Text()
}

var actionTS atomic.Int64

// click posts a signed block_actions payload: user pressed the button
// actionID carrying value on the run message at channel/ts.
func (h *harness) click(user, actionID, value, ts string) {
	h.t.Helper()
	n := actionTS.Add(1)
	payload := map[string]any{
		"type":         "block_actions",
		"user":         map[string]any{"id": user, "username": strings.ToLower(user), "team_id": "T0TEAM"},
		"team":         map[string]any{"id": "T0TEAM", "domain": "example"},
		"container":    map[string]any{"type": "message", "message_ts": ts, "channel_id": opsChan, "is_ephemeral": false},
		"channel":      map[string]any{"id": opsChan, "name": "ops"},
		"message":      map[string]any{"type": "message", "ts": ts},
		"trigger_id":   fmt.Sprintf("%d.2.trigger", n),
		"response_url": h.rec.ResponseURL(fmt.Sprintf("click-%d", n)),
		"actions": []map[string]any{{
			"type": "button", "action_id": actionID, "block_id": "runbot_actions", "value": value,
			"text": map[string]any{"type": "plain_text", "text": actionID}, "action_ts": fmt.Sprintf("1700000100.%06d", n),
		}},
	}
	raw, err := json.Marshal(payload)
	require.NoError(h.t, err)
	body := url.Values{"payload": {string(raw)}}.Encode()
	resp, out := h.do(signed(h.t, h.srv.URL+"/slack/interactions", []byte(body), h.now(), signingSecret))
	require.Equal(h.t, http.StatusOK, resp.StatusCode, string(out))
}

// idle waits until the bot has finished everything it started.
func (h *harness) idle() {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	require.NoError(h.t, h.disp.Idle(ctx))
}

// lastMessage is the newest content of the run message at ts: the last
// chat.update of it, or its chat.postMessage.
func (h *harness) lastMessage(ts string) slackrec.Call {
	h.t.Helper()
	var last slackrec.Call
	found := false
	for _, c := range h.rec.Calls("chat.postMessage", "chat.update") {
		if c.Status != http.StatusOK {
			continue
		}
		if c.Method == "chat.update" && c.Form.Get("ts") == ts {
			last, found = c, true
		}
	}
	if !found {
		for _, c := range h.rec.Calls("chat.postMessage") {
			if c.Status == http.StatusOK {
				last, found = c, true
			}
		}
	}
	require.True(h.t, found, "no message for ts %s", ts)
	return last
}

// runOnce runs the stuck-worker runbook from Slack as the requester and
// returns the run record and its message's ts.
func (h *harness) runOnce(extra string) (store.Run, string) {
	h.t.Helper()
	reply := h.command(requester, "stuck here "+h.dir+" "+extra)
	require.Contains(h.t, replyText(h.t, reply), "Starting stuck-worker")
	h.idle()
	runs, err := h.store.ListRuns(h.t.Context(), store.RunFilter{})
	require.NoError(h.t, err)
	require.Len(h.t, runs, 1)
	require.NotNil(h.t, runs[0].Message, "run message was not posted")
	return runs[0], runs[0].Message.ID
}

// buttonValue finds the value of a button in a message's blocks.
func buttonValue(t *testing.T, c slackrec.Call, actionID string) string {
	t.Helper()
	for _, b := range c.Blocks() {
		els, _ := b["elements"].([]any)
		for _, e := range els {
			m, _ := e.(map[string]any)
			if m["action_id"] == actionID {
				return m["value"].(string)
			}
		}
	}
	t.Fatalf("no %s button in %s", actionID, c.Text())
	return ""
}

func hasButtons(c slackrec.Call) bool {
	for _, b := range c.Blocks() {
		if b["type"] == "actions" {
			return true
		}
	}
	return false
}

// ephemeralsTo returns the text of every ephemeral message to user.
func (h *harness) ephemeralsTo(user string) []string {
	var out []string
	for _, c := range h.rec.Calls("chat.postEphemeral") {
		if c.Form.Get("user") == user {
			out = append(out, c.Text())
		}
	}
	return out
}

func (h *harness) appliedCount() int {
	data, err := os.ReadFile(filepath.Join(h.dir, "applied.log"))
	if os.IsNotExist(err) {
		return 0
	}
	require.NoError(h.t, err)
	return strings.Count(string(data), "restarted\n")
}

func slackrecFailure429(retryAfter int) slackrec.Failure {
	return slackrec.Failure{Status: 429, RetryAfter: retryAfter}
}
