package alerts

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/chat"
	"github.com/runbot/runbot/chat/chattest"
	"github.com/runbot/runbot/dispatch"
	"github.com/runbot/runbot/internal/heartbeat"
	"github.com/runbot/runbot/internal/secret"
	"github.com/runbot/runbot/internal/syncbuf"
	"github.com/runbot/runbot/inventory"
	"github.com/runbot/runbot/runbooks/bind"
	"github.com/runbot/runbot/runbooks/engine"
	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/store"
)

// Credentials of the alert tests: the bearer token and the basic auth
// that the captured fixtures were sent with.
const (
	alertToken = "test-bearer-token"
	alertUser  = "am"
	alertPass  = "s3cret"
	alertsChan = "C0ALERTS"
	// opsChan is the dispatcher's channel, for runs whose trigger names none.
	opsChan = "C0OPS"
)

// alertHarness is runbot's alert intake wired to real parts: the SQLite
// store in a temp file, the dispatch core running the test runbook on
// this machine, the webhook served over real HTTP, and the recording chat
// of chattest in place of a chat platform.
type alertHarness struct {
	t      *testing.T
	rec    *chattest.Recorder
	disp   *dispatch.Dispatcher
	alerts *Receiver
	srv    *httptest.Server
	store  *store.SQLite
	reg    *prometheus.Registry
	beat   *heartbeat.Monitor
	logs   *syncbuf.Buffer
	// dir is the test runbook's state directory: the service is healthy
	// when dir/healthy exists.
	dir string
}

type alertSetup struct {
	cfg       Config
	storeOpts []store.Option
	// noRun leaves the intake loop to the test.
	noRun bool
	now   func() time.Time
	// dispatchStore, when set, is the store the dispatcher sees, around
	// the real one.
	dispatchStore func(store.Store) store.Store
}

// newAlertHarness builds the intake. Unless tweaked, HighErrorRate alerts
// (the captured fixtures) route to service-errors with the service from
// their labels; the runbook's own trigger routes ServiceErrors.
func newAlertHarness(t *testing.T, tweak ...func(*alertSetup)) *alertHarness {
	t.Helper()
	h := &alertHarness{t: t, rec: chattest.New(), dir: t.TempDir(), logs: &syncbuf.Buffer{}, reg: prometheus.NewRegistry()}
	setup := alertSetup{cfg: Config{
		BearerToken: writeSecret(t, "bearer", alertToken),
		BasicUser:   alertUser,
		BasicPass:   writeSecret(t, "basic", alertPass),
		Channel:     alertsChan,
		Routes: []Route{{
			Match:   map[string]string{"alertname": "HighErrorRate"},
			Runbook: "service-errors",
			Params:  map[string]string{"host": "here", "service": "{{ .labels.service }}", "dir": h.dir},
		}},
	}}
	for _, f := range tweak {
		f(&setup)
	}
	if setup.now == nil {
		setup.now = time.Now
	}
	st, err := store.Open(t.Context(), filepath.Join(t.TempDir(), "runbot.db"), setup.storeOpts...)
	require.NoError(t, err)
	h.store = st
	catalog := testCatalog(t, "testdata/alertmanager/runbooks")
	inv, err := inventory.Load("testdata/inventory.yaml")
	require.NoError(t, err)
	eng := &engine.Engine{Targets: &bind.InventoryTargets{Inventory: inv, Runners: bind.LocalRunners{}}}
	rem := &remediation.Remediator{Engine: eng, Store: st, Catalog: catalog}
	logger := slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	// Updates fast enough for tests; the coalescing itself is tested
	// with synctest in the Slack platform's tests.
	var ds store.Store = st
	if setup.dispatchStore != nil {
		ds = setup.dispatchStore(st)
	}
	h.disp, err = dispatch.New(dispatch.Config{Channel: opsChan, UpdateInterval: 20 * time.Millisecond}, dispatch.Deps{
		Catalog: catalog, Engine: eng, Remediator: rem, Store: ds, Chat: h.rec, Logger: logger,
	})
	require.NoError(t, err)
	h.beat = heartbeat.New(setup.now)
	h.alerts, err = New(setup.cfg, h.disp, Deps{TriggerDeps: dispatch.TriggerDeps{Store: st, Chat: h.disp.Chat(), Heartbeat: h.beat, Now: setup.now, Logger: logger}})
	require.NoError(t, err)
	require.NoError(t, h.reg.Register(h.alerts))
	h.srv = httptest.NewServer(h.alerts.Handler())

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	if setup.noRun {
		done <- nil
	} else {
		go func() { done <- h.alerts.Run(ctx) }()
	}
	t.Cleanup(func() {
		h.srv.Close()
		cancel()
		require.NoError(t, <-done)
		sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer scancel()
		require.NoError(t, h.disp.Shutdown(sctx))
		require.NoError(t, st.Close())
		require.NotContains(t, h.logs.String(), alertToken)
		require.NotContains(t, h.logs.String(), alertPass)
	})
	return h
}

func writeSecret(t *testing.T, name, value string) secret.Ref {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(value+"\n"), 0o600))
	return secret.Ref{File: path}
}

// fixture reads a file of testdata/alertmanager.
func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "alertmanager", name))
	require.NoError(t, err)
	return b
}

// auth is how a delivery authenticates.
type auth func(*http.Request)

func bearer(tok string) auth {
	return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }
}

func basic(user, pass string) auth {
	return func(r *http.Request) { r.SetBasicAuth(user, pass) }
}

// deliver POSTs a body to an endpoint the way Alertmanager does.
func (h *alertHarness) deliver(path string, body []byte, a auth) (int, string, http.Header) {
	h.t.Helper()
	req, err := http.NewRequest(http.MethodPost, h.srv.URL+path, bytes.NewReader(body))
	require.NoError(h.t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Alertmanager/")
	if a != nil {
		a(req)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(h.t, err)
	defer func() { _ = resp.Body.Close() }()
	out, err := io.ReadAll(resp.Body)
	require.NoError(h.t, err)
	return resp.StatusCode, string(out), resp.Header
}

// accepted delivers an Alertmanager notification that must be accepted
// and returns the acknowledgement.
func (h *alertHarness) accepted(body []byte) alertAck {
	h.t.Helper()
	code, out, _ := h.deliver("/alerts/alertmanager", body, bearer(alertToken))
	require.Equal(h.t, http.StatusOK, code, out)
	var ack alertAck
	require.NoError(h.t, json.Unmarshal([]byte(out), &ack), out)
	require.Equal(h.t, "accepted", ack.Status)
	return ack
}

// settle waits until the intake handled every accepted alert and the bot
// finished everything that started: runs, messages, updates.
func (h *alertHarness) settle() {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		require.NoError(h.t, h.alerts.settled(ctx))
		require.NoError(h.t, h.disp.Idle(ctx))
		h.alerts.mu.Lock()
		n := h.alerts.inflight
		h.alerts.mu.Unlock()
		if n == 0 {
			return
		}
	}
}

func (h *alertHarness) runs() []store.Run {
	h.t.Helper()
	runs, err := h.store.ListRuns(h.t.Context(), store.RunFilter{Trigger: store.TriggerAlert})
	require.NoError(h.t, err)
	return runs
}

// posts returns the messages posted.
func (h *alertHarness) posts() []chattest.Post { return h.rec.Posts() }

// alertPost is an alert's own message (the one with its fingerprint, not
// in a thread), with every update it got.
func (h *alertHarness) alertPost(name string) (chattest.Post, bool) {
	for _, p := range h.rec.Posts() {
		if p.Ref.Channel != alertsChan || p.Thread != "" {
			continue
		}
		if text := p.Message.Text(); strings.Contains(text, "Fingerprint") && strings.Contains(text, name) {
			return p, true
		}
	}
	return chattest.Post{}, false
}

// alertMessages returns the alert's message as posted, then as each
// update left it; the last is what the chat shows.
func (h *alertHarness) alertMessages(name string) []chat.Message {
	p, ok := h.alertPost(name)
	if !ok {
		return nil
	}
	return append([]chat.Message{p.Message}, p.Updates...)
}

// newestAlert is what the chat shows of an alert's message now.
func (h *alertHarness) newestAlert(name string) string {
	h.t.Helper()
	msgs := h.alertMessages(name)
	require.NotEmpty(h.t, msgs, "no message for alert %s", name)
	return msgs[len(msgs)-1].Text()
}

// runMessage is the newest content of the run message with id, which
// must have been updated since it was posted.
func (h *alertHarness) runMessage(id string) string {
	h.t.Helper()
	for _, p := range h.rec.Posts() {
		if p.Ref.ID == id {
			require.NotEmpty(h.t, p.Updates, "run message %s was never updated", id)
			return p.Last().Text()
		}
	}
	h.t.Fatalf("no run message %s", id)
	return ""
}

// thread returns the posts in the thread of the message with id.
func (h *alertHarness) thread(id string) []chattest.Post {
	var out []chattest.Post
	for _, p := range h.rec.Posts() {
		if p.Thread == id {
			out = append(out, p)
		}
	}
	return out
}

// wait waits until done holds for the chat's posts.
func (h *alertHarness) wait(done func([]chattest.Post) bool) {
	h.t.Helper()
	ctx, cancel := context.WithTimeoutCause(h.t.Context(), 60*time.Second, errors.New("the chat never showed what the test waits for"))
	defer cancel()
	require.NoError(h.t, h.rec.Wait(ctx, done), "alerts log:\n%s", h.logs.String())
}

// metric reads a counter or gauge from the registry the intake is
// registered on; labels are name=value pairs the sample must have.
func (h *alertHarness) metric(name string, labels ...string) float64 {
	h.t.Helper()
	mfs, err := h.reg.Gather()
	require.NoError(h.t, err)
	total := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	sample:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, lp := range m.GetLabel() {
					if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
						found = true
					}
				}
				if !found {
					continue sample
				}
			}
			total += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return total
}
