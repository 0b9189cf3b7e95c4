package commands

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/chat"
	"github.com/runbot/runbot/chat/chattest"
	"github.com/runbot/runbot/dispatch"
	"github.com/runbot/runbot/internal/syncbuf"
	"github.com/runbot/runbot/inventory"
	"github.com/runbot/runbot/runbooks/bind"
	"github.com/runbot/runbot/runbooks/catalog"
	"github.com/runbot/runbot/runbooks/engine"
	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/store"
)

// Users and channels of the tests. U0REQ, U0AAA and U0BBB are in the
// oncall group, which may run every runbook and approve the test
// remediation; U0XXX is a stranger.
const (
	requester = "U0REQ"
	approverA = "U0AAA"
	approverB = "U0BBB"
	stranger  = "U0XXX"
	opsChan   = "C0OPS"
)

// harness is the chat commands wired to real parts: the SQLite store in a
// temp file, the dispatch core running the runbook engine on this machine,
// and the recording chat of chattest, which the commands reply through
// and the dispatcher posts to. Commands and clicks reach the handler as a
// chat platform hands them on.
type harness struct {
	t     *testing.T
	rec   *chattest.Recorder
	disp  *dispatch.Dispatcher
	cmds  *Handler
	store *store.SQLite
	// dir is the stuck-worker's state directory.
	dir  string
	logs *syncbuf.Buffer
	// ids numbers deliveries.
	ids atomic.Int64
}

func newHarness(t *testing.T, tweak ...func(*Config)) *harness {
	t.Helper()
	h := &harness{t: t, rec: chattest.New(), dir: t.TempDir(), logs: &syncbuf.Buffer{}}
	cfg := Config{
		Groups: remediation.Groups{"oncall": {requester, approverA, approverB}},
		Access: []AccessRule{{Runbooks: []string{"*"}, Groups: []string{"oncall"}}},
	}
	for _, f := range tweak {
		f(&cfg)
	}
	st, err := store.Open(t.Context(), filepath.Join(t.TempDir(), "runbot.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	h.store = st
	cat, problems, err := catalog.Load("testdata/runbooks")
	require.NoError(t, err)
	require.Empty(t, problems)
	inv, err := inventory.Load("testdata/inventory.yaml")
	require.NoError(t, err)
	eng := &engine.Engine{Targets: &bind.InventoryTargets{Inventory: inv, Runners: bind.LocalRunners{}}}
	rem := &remediation.Remediator{Engine: eng, Store: st, Catalog: cat, Groups: cfg.Groups}
	logger := slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	// Updates fast enough for tests; the coalescing itself is tested with
	// synctest in the Slack platform's tests.
	h.disp, err = dispatch.New(dispatch.Config{Channel: opsChan, UpdateInterval: 20 * time.Millisecond}, dispatch.Deps{
		Catalog: cat, Engine: eng, Remediator: rem, Store: st, Chat: h.rec, Logger: logger,
	})
	require.NoError(t, err)
	h.cmds, err = New(cfg, h.disp, Deps{TriggerDeps: dispatch.TriggerDeps{Store: st, Logger: logger}, Engine: eng, Replier: h.rec, UserGroups: h.rec})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, h.disp.Shutdown(ctx))
	})
	return h
}

// commandOf is a command as a platform delivers it, with a fresh ID.
func (h *harness) commandOf(user, channel, text string) chat.Command {
	n := h.ids.Add(1)
	return chat.Command{ID: fmt.Sprintf("%d.1.trigger", n), User: user, Channel: channel, Text: text, ReplyTo: fmt.Sprintf("reply-cmd-%d", n)}
}

func (h *harness) command(user, text string) chat.Message {
	h.t.Helper()
	return h.commandIn(user, opsChan, text)
}

func (h *harness) commandIn(user, channel, text string) chat.Message {
	h.t.Helper()
	return h.cmds.Command(h.t.Context(), h.commandOf(user, channel, text))
}

// click presses the button action carrying value on the run message id.
func (h *harness) click(user, action, value, id string) {
	h.t.Helper()
	n := h.ids.Add(1)
	h.cmds.Click(h.t.Context(), chat.Click{
		User: user, Channel: opsChan, Message: chat.Ref{Platform: chattest.Platform, Channel: opsChan, ID: id},
		Action: action, Value: value, ReplyTo: fmt.Sprintf("reply-click-%d", n),
	})
}

// idle waits until the dispatcher has finished everything it started.
func (h *harness) idle() {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	require.NoError(h.t, h.disp.Idle(ctx))
}

// lastMessage is the newest content of the run message id.
func (h *harness) lastMessage(id string) chat.Message {
	h.t.Helper()
	for _, p := range h.rec.Posts() {
		if p.Ref.ID == id {
			return p.Last()
		}
	}
	h.t.Fatalf("no message %s", id)
	return chat.Message{}
}

// runOnce runs the stuck-worker runbook as the requester and returns the
// run record and its message's id.
func (h *harness) runOnce(extra string) (store.Run, string) {
	h.t.Helper()
	reply := h.command(requester, "stuck here "+h.dir+" "+extra)
	require.Contains(h.t, reply.Text(), "Starting stuck-worker")
	h.idle()
	runs, err := h.store.ListRuns(h.t.Context(), store.RunFilter{})
	require.NoError(h.t, err)
	require.Len(h.t, runs, 1)
	require.NotNil(h.t, runs[0].Message, "run message was not posted")
	return runs[0], runs[0].Message.ID
}

// buttonValue finds the value of a button of a message.
func buttonValue(t *testing.T, m chat.Message, action string) string {
	t.Helper()
	for _, b := range m.Buttons {
		if b.ID == action {
			return b.Value
		}
	}
	t.Fatalf("no %s button in %s", action, m.Text())
	return ""
}

func hasButtons(m chat.Message) bool { return len(m.Buttons) > 0 }

// repliesTo returns the text of every private reply to user.
func (h *harness) repliesTo(user string) []string {
	var out []string
	for _, r := range h.rec.Replies() {
		if r.To.User == user {
			out = append(out, r.Message.Text())
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
