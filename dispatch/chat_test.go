package dispatch

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/chat"
	"github.com/runbot/runbot/chat/chattest"
	"github.com/runbot/runbot/internal/syncbuf"
	"github.com/runbot/runbot/inventory"
	"github.com/runbot/runbot/runbooks/bind"
	"github.com/runbot/runbot/runbooks/catalog"
	"github.com/runbot/runbot/runbooks/engine"
	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/store"
)

// opsChan is the channel runs post to.
const opsChan = "C0OPS"

// newChatDispatcher builds a dispatcher on c (nil: no chat at all), with
// no Slack anywhere.
func newChatDispatcher(t *testing.T, c chat.Chat) (*Dispatcher, *store.SQLite, string) {
	t.Helper()
	return newChatDispatcherWith(t, c, testSetup{})
}

// testSetup changes what newChatDispatcherWith builds; zero values take
// the defaults.
type testSetup struct {
	// runbooks is the catalog's directory (testdata/runbooks).
	runbooks string
	// logs gets the dispatcher's log (discarded).
	logs io.Writer
	// timeline draws the timeline picture (none).
	timeline TimelineFunc
	// defaultPacing keeps the production gap between two updates of one
	// message (1 s) instead of the tests' 10 ms.
	defaultPacing bool
	// maxRuns bounds concurrent runs (the default, 8).
	maxRuns int
	// wrap, when set, is the store the dispatcher sees, around the real one.
	wrap func(store.Store) store.Store
}

// newChatDispatcherWith is newChatDispatcher as setup says.
func newChatDispatcherWith(t *testing.T, c chat.Chat, setup testSetup) (*Dispatcher, *store.SQLite, string) {
	t.Helper()
	st, err := store.Open(t.Context(), filepath.Join(t.TempDir(), "runbot.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	if setup.runbooks == "" {
		setup.runbooks = "testdata/runbooks"
	}
	if setup.logs == nil {
		setup.logs = io.Discard
	}
	cat, problems, err := catalog.Load(setup.runbooks)
	require.NoError(t, err)
	require.Empty(t, problems)
	inv, err := inventory.Load("testdata/inventory.yaml")
	require.NoError(t, err)
	eng := &engine.Engine{Targets: &bind.InventoryTargets{Inventory: inv, Runners: bind.LocalRunners{}}}
	rem := &remediation.Remediator{Engine: eng, Store: st, Catalog: cat}
	cfg := Config{Channel: opsChan, UpdateInterval: 10 * time.Millisecond, MaxConcurrentRuns: setup.maxRuns}
	var ds store.Store = st
	if setup.wrap != nil {
		ds = setup.wrap(st)
	}
	if setup.defaultPacing {
		cfg.UpdateInterval = 0
	}
	d, err := New(cfg, Deps{
		Catalog: cat, Engine: eng, Remediator: rem, Store: ds, Chat: c, Logger: slog.New(slog.NewTextHandler(setup.logs, nil)), Timeline: setup.timeline,
	})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, d.Shutdown(ctx))
	})
	return d, st, t.TempDir()
}

// The dispatcher runs, records and posts through any chat.Chat: here the
// recording chat, not Slack.
func TestDispatcherPostsThroughTheChatSeam(t *testing.T) {
	t.Parallel()
	rec := chattest.New()
	d, st, dir := newChatDispatcher(t, rec)
	acc, err := d.Submit(t.Context(), Request{
		Key: "k1", Runbook: "stuck-worker", Params: map[string]string{"host": "here", "dir": dir},
		RequestedBy: "alertmanager", Source: store.TriggerAlert,
	})
	require.NoError(t, err)
	require.NoError(t, d.Idle(t.Context()))
	work, err := st.GetWork(t.Context(), acc.WorkID)
	require.NoError(t, err)
	require.Equal(t, store.WorkDone, work.State)
	run, err := st.GetRun(t.Context(), work.RunID)
	require.NoError(t, err)
	require.Equal(t, store.RunFinished, run.Status)
	require.NotNil(t, run.Message)
	require.Equal(t, chattest.Platform, run.Message.Platform)

	posts := rec.Posts()
	require.Len(t, posts, 1)
	require.Equal(t, opsChan, posts[0].Ref.Channel)
	require.Contains(t, posts[0].Last().Text(), run.ID)
}

// Without any chat, queued and direct (scheduled) runs still run and are
// recorded.
func TestDispatcherWithoutChatRunsAndRecords(t *testing.T) {
	t.Parallel()
	d, st, dir := newChatDispatcher(t, nil)
	acc, err := d.Submit(t.Context(), Request{
		Runbook: "stuck-worker", Params: map[string]string{"host": "here", "dir": dir},
		RequestedBy: "alertmanager", Source: store.TriggerAlert,
	})
	require.NoError(t, err)
	require.NoError(t, d.Idle(t.Context()))
	work, err := st.GetWork(t.Context(), acc.WorkID)
	require.NoError(t, err)
	run, err := st.GetRun(t.Context(), work.RunID)
	require.NoError(t, err)
	require.Equal(t, store.RunFinished, run.Status)
	require.Nil(t, run.Message)

	res := d.RunNow(t.Context(), Direct{
		Runbook: "stuck-worker", Params: map[string]string{"host": "here", "dir": dir},
		Source: store.TriggerSchedule, RequestedBy: "nightly",
	})
	require.NoError(t, res.Err)
	require.False(t, res.Posted)
	direct, err := st.GetRun(t.Context(), res.Run.ID)
	require.NoError(t, err)
	require.Equal(t, store.RunFinished, direct.Status)
	require.Equal(t, store.TriggerSchedule, direct.Trigger)
}

// Without a chat, a run's result is logged, but not its evidence: what a
// command printed may hold a secret, and only the chat platform redacts.
func TestDispatcherWithoutChatLogsNoEvidence(t *testing.T) {
	t.Parallel()
	logs := &syncbuf.Buffer{}
	d, _, dir := newChatDispatcherWith(t, nil, testSetup{logs: logs})
	res := d.RunNow(t.Context(), Direct{
		Runbook: "stuck-worker", Params: map[string]string{"host": "here", "dir": dir, "note": "token=hunter2-planted"},
		Source: store.TriggerSchedule, RequestedBy: "nightly",
	})
	require.NoError(t, res.Err)
	require.Contains(t, logs.String(), res.Run.ID, "the result is logged")
	require.NotContains(t, logs.String(), "hunter2", "the evidence is not")
}
