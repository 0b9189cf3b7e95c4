package alerts

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/chat"
	"github.com/runbot/runbot/chat/chattest"
	"github.com/runbot/runbot/internal/heartbeat"
	"github.com/runbot/runbot/store"
)

// Replaying every captured Alertmanager delivery in the order they came:
// the first firing notification starts one run in the alert message's
// thread; the repeat and the same alert from an older Alertmanager fold
// into it and show on the message; the resolution closes the loop in the
// thread; the truncated group, which no route maps, is recorded and
// acknowledged without a run.
func TestAlertmanagerFixturesReplay(t *testing.T) {
	t.Parallel()
	h := newAlertHarness(t)

	ack := h.accepted(fixture(t, "firing.json"))
	require.Equal(t, alertAck{Status: "accepted", Alerts: 1, New: 1}, ack)
	h.settle()
	runs := h.runs()
	require.Len(t, runs, 1)
	run := runs[0]
	require.Equal(t, "service-errors", run.Runbook)
	require.Equal(t, store.RunFinished, run.Status)
	require.Equal(t, store.OutcomeCritical, run.Outcome, "the service's state directory has no healthy marker")
	require.Equal(t, map[string]string{"host": "here", "service": "api", "dir": h.dir, "sleep": "0"}, run.Params)
	require.NotNil(t, run.Message)
	msgs := h.alertMessages("HighErrorRate")
	require.NotEmpty(t, msgs)
	first := msgs[0]
	require.Contains(t, first.Text(), "HighErrorRate firing")
	require.Contains(t, first.Text(), "API 5xx ratio above 5%")
	require.Contains(t, first.Text(), "Seen 1 time, last at")
	// The run's message is a reply in the alert message's thread.
	runPost := h.thread(run.Message.ID)
	require.Empty(t, runPost, "nothing replies to the run message itself")
	alert, ok := h.alertPost("HighErrorRate")
	require.True(t, ok)
	require.NotEmpty(t, alert.Updates, "the alert message was updated once its run was queued")
	alertTS := alert.Ref.ID
	require.Contains(t, h.newestAlert("HighErrorRate"), "Diagnosis: The service is failing requests. (run "+run.ID+"; its message is in this thread)",
		"the alert's message shows its run's verdict once the run ended")
	inThread := h.thread(alertTS)
	require.Len(t, inThread, 1)
	require.Equal(t, alertsChan, inThread[0].Ref.Channel)
	require.Contains(t, inThread[0].Message.Text(), run.ID, "the post in the thread is the run's message")
	require.Contains(t, h.runMessage(run.Message.ID), "The service answers 12% errors.")

	require.Equal(t, alertAck{Status: "accepted", Alerts: 1, Repeats: 1}, h.accepted(fixture(t, "firing-repeat.json")))
	require.Equal(t, alertAck{Status: "accepted", Alerts: 1, Repeats: 1}, h.accepted(fixture(t, "firing-am-v0.31.1.json")))
	h.settle()
	require.Len(t, h.runs(), 1, "repeats start no run")
	shown := h.newestAlert("HighErrorRate")
	require.Contains(t, shown, "Seen 3 times, last at "+time.Now().UTC().Format("2006-01-02"))
	st, err := h.store.GetAlert(t.Context(), "abcc45788bcf7aa8")
	require.NoError(t, err)
	require.Equal(t, 2, st.Repeats)
	require.Equal(t, run.ID, st.RunID)

	require.Equal(t, alertAck{Status: "accepted", Alerts: 1, Resolved: 1}, h.accepted(fixture(t, "resolved.json")))
	h.settle()
	require.Contains(t, h.newestAlert("HighErrorRate"), "HighErrorRate resolved")
	require.Contains(t, h.newestAlert("HighErrorRate"), "Resolved at 2026-11-29 07:47:04 UTC")
	inThread = h.thread(alertTS)
	require.Len(t, inThread, 2)
	require.Contains(t, inThread[1].Message.Text(), "HighErrorRate resolved")
	require.Contains(t, inThread[1].Message.Text(), "Resolved at 2026-11-29 07:47:04 UTC, after firing for 21s; seen 3 times.")

	// The truncated group comes over basic auth, as its receiver sends it.
	posted := h.rec.Calls()
	code, out, _ := h.deliver("/alerts/alertmanager", fixture(t, "firing-truncated.json"), basic(alertUser, alertPass))
	require.Equal(t, http.StatusOK, code, out)
	require.JSONEq(t, `{"status":"accepted","alerts":1,"new":1,"repeats":0,"resolved":0,"unrouted":1}`, out)
	h.settle()
	require.Equal(t, posted, h.rec.Calls(), "an unrouted alert posts nothing")
	require.Len(t, h.runs(), 1)
	disk, err := h.store.AlertDeliveries(t.Context(), "d971aa73888df105")
	require.NoError(t, err)
	require.Len(t, disk, 1, "the unrouted alert is recorded")

	require.Equal(t, 5.0, h.metric("runbot_alert_notifications_received_total"))
	require.Equal(t, 4.0, h.metric("runbot_alerts_received_total", "status", "firing"))
	require.Equal(t, 1.0, h.metric("runbot_alerts_received_total", "status", "resolved"))
	require.Equal(t, 2.0, h.metric("runbot_alerts_deduplicated_total"))
	require.Equal(t, 1.0, h.metric("runbot_alerts_unrouted_total"))
	require.Equal(t, 1.0, h.metric("runbot_alert_runs_queued_total"))
	require.Equal(t, 0.0, h.metric("runbot_alert_notifications_rejected_total"))
}

func TestAlertWebhookRefusesWrongCredentials(t *testing.T) {
	t.Parallel()
	h := newAlertHarness(t)
	body := fixture(t, "firing.json")
	for name, a := range map[string]auth{
		"none":            nil,
		"wrong bearer":    bearer("test-bearer-tokem"),
		"bearer prefix":   bearer("test-bearer"),
		"empty bearer":    bearer(""),
		"wrong password":  basic(alertUser, "s3cre7"),
		"wrong user":      basic("admin", alertPass),
		"token as basic":  basic(alertToken, ""),
		"other scheme":    func(r *http.Request) { r.Header.Set("Authorization", "Token "+alertToken) },
		"token in header": func(r *http.Request) { r.Header.Set("X-Token", alertToken) },
	} {
		code, out, hdr := h.deliver("/alerts/alertmanager", body, a)
		require.Equal(t, http.StatusUnauthorized, code, name)
		require.JSONEq(t, `{"error":"missing or wrong credentials"}`, out, name)
		require.Contains(t, hdr.Get("WWW-Authenticate"), "Bearer", name)
	}
	// Either configured scheme works, the bearer scheme in any case.
	code, out, _ := h.deliver("/alerts/alertmanager", body, func(r *http.Request) { r.Header.Set("Authorization", "bearer "+alertToken) })
	require.Equal(t, http.StatusOK, code, out)
	h.settle()
	states, err := h.store.RecentAlerts(t.Context(), time.Time{})
	require.NoError(t, err)
	require.Len(t, states, 1, "only the authenticated delivery was recorded")
	require.Equal(t, 9.0, h.metric("runbot_alert_notifications_rejected_total", "reason", "unauthorized"))
}

// Bodies runbot cannot take get 400 with a message that says what is
// wrong, and nothing is recorded or run.
func TestAlertWebhookRefusesBadPayloads(t *testing.T) {
	t.Parallel()
	h := newAlertHarness(t)
	for file, want := range map[string]string{
		"malformed.json":           "malformed JSON",
		"not-json.json":            "malformed JSON at byte 2: invalid character",
		"not-object.json":          "body must be a JSON object, got array",
		"wrong-version.json":       `unsupported webhook version "3" (runbot takes Alertmanager webhook version "4")`,
		"no-version.json":          `missing field "version"`,
		"no-alerts.json":           `missing field "alerts"`,
		"empty-alerts.json":        `field "alerts" is empty`,
		"missing-labels.json":      `alerts[0].labels: missing (an alert needs at least "alertname")`,
		"missing-alertname.json":   `alerts[0].labels.alertname: missing`,
		"missing-fingerprint.json": `alerts[0]: missing field "fingerprint"`,
		"missing-status.json":      `alerts[0]: missing field "status"`,
		"bad-status.json":          `alerts[0].status: want "firing" or "resolved", got "exploded"`,
		"label-not-string.json":    `alerts[0].labels.port: want a string, got number`,
		"bad-starts-at.json":       `alerts[0].startsAt: want an RFC 3339 time, got "yesterday"`,
	} {
		code, out, _ := h.deliver("/alerts/alertmanager", fixture(t, filepath.Join("bad", file)), bearer(alertToken))
		require.Equal(t, http.StatusBadRequest, code, file)
		var rej alertReject
		require.NoError(t, json.Unmarshal([]byte(out), &rej), file)
		require.Contains(t, rej.Error, want, file)
	}
	entries, err := os.ReadDir("testdata/alertmanager/bad")
	require.NoError(t, err)
	require.Len(t, entries, 14, "every bad payload has a case above")
	h.settle()
	states, err := h.store.RecentAlerts(t.Context(), time.Time{})
	require.NoError(t, err)
	require.Empty(t, states)
	require.Empty(t, h.runs())
	require.Zero(t, h.rec.Calls())
	require.Equal(t, 14.0, h.metric("runbot_alert_notifications_rejected_total", "reason", "invalid"))
}

func TestAlertWebhookRefusesHugeBodies(t *testing.T) {
	t.Parallel()
	h := newAlertHarness(t, func(s *alertSetup) { s.cfg.MaxBody = 4096 })
	var firing map[string]any
	require.NoError(t, json.Unmarshal(fixture(t, "firing.json"), &firing))
	firing["alerts"].([]any)[0].(map[string]any)["annotations"].(map[string]any)["description"] = strings.Repeat("x", 5000)
	huge, err := json.Marshal(firing)
	require.NoError(t, err)
	code, out, _ := h.deliver("/alerts/alertmanager", huge, bearer(alertToken))
	require.Equal(t, http.StatusRequestEntityTooLarge, code)
	require.JSONEq(t, `{"error":"body is larger than the limit of 4096 bytes"}`, out)
	// A body under the limit still goes through.
	h.accepted(fixture(t, "firing.json"))
	h.settle()
	require.Len(t, h.runs(), 1)
	require.Equal(t, 1.0, h.metric("runbot_alert_notifications_rejected_total", "reason", "too_large"))
}

// Label values are data. A hostile value is recorded, reported as an
// invalid param (the runbook's own validation refuses it), shown as
// plain text, and never run.
func TestAlertHostileLabelsAreData(t *testing.T) {
	t.Parallel()
	h := newAlertHarness(t, func(s *alertSetup) {
		s.cfg.Routes = []Route{{
			Match:   map[string]string{"alertname": "ServiceErrors"},
			Runbook: "service-errors",
			Params:  map[string]string{"host": "here", "service": "{{ .labels.service }}"},
		}}
	})
	ack := h.accepted(fixture(t, "hostile.json"))
	require.Equal(t, 1, ack.Invalid, "the sender is told in the answer, not only in chat and the log")
	require.Len(t, ack.Problems, 1)
	require.Contains(t, ack.Problems[0], "ServiceErrors (0badc0ffee000001): invalid params from the alert: runbook service-errors: param service")
	ack.Invalid, ack.Problems = 0, nil
	require.Equal(t, alertAck{Status: "accepted", Alerts: 1, New: 1}, ack)
	h.settle()
	require.Empty(t, h.runs(), "an alert whose params are invalid is never run")
	_, err := os.Stat("/tmp/runbot-pwned")
	require.True(t, os.IsNotExist(err))
	msgs := h.alertMessages("ServiceErrors")
	require.Len(t, msgs, 1)
	// The values reach the chat as plain text, exactly as sent: never
	// markup. A platform escapes plain text when it renders it (Slack's
	// hostile golden in its Block Kit tests), so they cannot ping or link.
	m := msgs[0]
	require.Contains(t, m.Text(), "Not run: invalid params from the alert: runbook service-errors: param service")
	require.Contains(t, m.Sections, chat.Section{Text: "<!here> please click <https://evil.example|this> & `run` it"})
	labels := sectionHeaded(t, m, "Labels")
	require.Contains(t, labels.Lines, chat.Line{Text: "instance=<!channel> *bold* <https://evil.example|click here>", Code: true})
	require.Contains(t, labels.Lines, chat.Line{Text: "service=api; touch /tmp/runbot-pwned #", Code: true})
	deliveries, err := h.store.AlertDeliveries(t.Context(), "0badc0ffee000001")
	require.NoError(t, err)
	require.Len(t, deliveries, 1)
	require.Contains(t, string(deliveries[0].Payload), `"service":"api; touch /tmp/runbot-pwned #"`)
	require.Equal(t, 1.0, h.metric("runbot_alerts_invalid_params_total"))

	// Its repeats update the same report; they do not report again.
	h.accepted(fixture(t, "hostile.json"))
	h.settle()
	require.Contains(t, h.newestAlert("ServiceErrors"), "Seen 2 times")
	require.Len(t, h.posts(), 1)
}

// One alert starts at most one run while its run is still going, even
// after the dedup window; once the run is done and the window passed, a
// delivery starts a new one.
func TestAlertNeverRunsTwiceAtOnce(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{t: time.Now()}
	h := newAlertHarness(t, func(s *alertSetup) {
		s.now = clock.Now
		s.cfg.Routes[0].Params["sleep"] = "1"
	})
	h.accepted(fixture(t, "firing.json"))
	require.NoError(t, h.alerts.settled(t.Context()))
	clock.Advance(2 * time.Hour) // past the store's one-hour window
	ack := h.accepted(fixture(t, "firing-repeat.json"))
	require.Equal(t, 1, ack.New, "past the window the store starts a new trigger")
	h.settle()
	require.Len(t, h.runs(), 1, "but the first run was still going, so none started")
	require.Contains(t, h.newestAlert("HighErrorRate"), "Seen 2 times")
	require.Equal(t, 1.0, h.metric("runbot_alerts_deduplicated_total"))

	// The run is over now, and the window long past: a new run.
	require.NoError(t, h.alerts.queue.refresh(t.Context(), h.store, h.alerts.now(), 0))
	clock.Advance(2 * time.Hour)
	require.Equal(t, 1, h.accepted(fixture(t, "firing-repeat.json")).New)
	h.settle()
	require.Len(t, h.runs(), 2)
}

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Beyond MaxQueue, a notification that would start a new run gets 503
// before anything is recorded, so Alertmanager delivers it again; repeats
// and resolutions of alerts already running still go through.
func TestAlertQueueBound(t *testing.T) {
	t.Parallel()
	h := newAlertHarness(t, func(s *alertSetup) {
		s.cfg.MaxQueue = 1
		s.cfg.Routes[0].Params["sleep"] = "1"
	})
	h.accepted(fixture(t, "firing.json"))
	require.NoError(t, h.alerts.settled(t.Context()))
	require.Equal(t, 1, h.alerts.QueueDepth())
	other := bytes.ReplaceAll(fixture(t, "firing.json"), []byte("abcc45788bcf7aa8"), []byte("0000000000000002"))
	code, out, hdr := h.deliver("/alerts/alertmanager", other, bearer(alertToken))
	require.Equal(t, http.StatusServiceUnavailable, code, out)
	require.Equal(t, "5", hdr.Get("Retry-After"))
	require.Contains(t, out, "1 alert runs are queued or running (the limit); nothing was recorded")
	_, err := h.store.GetAlert(t.Context(), "0000000000000002")
	require.ErrorIs(t, err, store.ErrNotFound)
	require.Equal(t, 1.0, h.metric("runbot_alert_queue_depth"))
	require.Equal(t, 1.0, h.metric("runbot_alert_queue_capacity"))

	h.accepted(fixture(t, "firing-repeat.json"))
	h.settle()
	// The first run is done: the alert that was turned away is taken now.
	require.NoError(t, h.alerts.queue.refresh(t.Context(), h.store, h.alerts.now(), 0))
	require.Equal(t, 0, h.alerts.QueueDepth())
	h.accepted(other)
	h.settle()
	require.Len(t, h.runs(), 2)
	require.Equal(t, 1.0, h.metric("runbot_alert_notifications_rejected_total", "reason", "queue_full"))
}

// An alert recorded (and so acknowledged) just before the process died,
// with no run queued yet, is run when the intake starts again; its next
// delivery is a repeat of that run.
func TestAlertAcceptedBeforeRestartIsRun(t *testing.T) {
	t.Parallel()
	h := newAlertHarness(t, func(s *alertSetup) { s.noRun = true })
	alerts, err := parseAlertmanager(fixture(t, "firing.json"))
	require.NoError(t, err)
	raw, err := json.Marshal(alerts[0])
	require.NoError(t, err)
	st, err := h.store.RecordAlert(t.Context(), alerts[0].Fingerprint, raw, time.Now())
	require.NoError(t, err)
	require.True(t, st.Fresh)

	ctx, stop := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- h.alerts.Run(ctx) }()
	defer func() {
		stop()
		require.NoError(t, <-done)
	}()
	h.wait(func(posts []chattest.Post) bool { return len(posts) > 0 })
	h.settle()
	runs := h.runs()
	require.Len(t, runs, 1)
	require.NotNil(t, runs[0].Message)
	require.Equal(t, alertsChan, runs[0].Message.Channel, "the run posts on its own in the alerts channel")
	require.Equal(t, store.RunFinished, runs[0].Status)

	require.Equal(t, 1, h.accepted(fixture(t, "firing-repeat.json")).Repeats)
	h.settle()
	require.Len(t, h.runs(), 1)
}

// The intake loop registers with the heartbeat monitor and keeps beating
// while it runs; once it stops, readiness reports it stuck.
func TestAlertIntakeHeartbeat(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{t: time.Now()}
	h := newAlertHarness(t, func(s *alertSetup) { s.now = clock.Now; s.noRun = true })
	require.Empty(t, h.beat.Check(), "a registered loop gets its max gap to start")
	clock.Advance(alertsMaxGap + time.Second)
	require.Equal(t, []string{Heartbeat}, stuckLoops(h.beat.Check()), "it was never started")

	ctx, stop := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- h.alerts.Run(ctx) }()
	// The loop beats at start and on every tick.
	require.Eventually(t, func() bool { return len(h.beat.Check()) == 0 }, 10*time.Second, 10*time.Millisecond)
	clock.Advance(alertsMaxGap + time.Second)
	require.Eventually(t, func() bool { return len(h.beat.Check()) == 0 }, 10*time.Second, 10*time.Millisecond)
	stop()
	require.NoError(t, <-done)
	clock.Advance(alertsMaxGap + time.Second)
	require.Equal(t, []string{Heartbeat}, stuckLoops(h.beat.Check()))
}

// sectionHeaded is the message's section with that heading.
func sectionHeaded(t *testing.T, m chat.Message, heading string) chat.Section {
	t.Helper()
	for _, s := range m.Sections {
		if s.Heading == heading {
			return s
		}
	}
	t.Fatalf("no section %q in\n%s", heading, m.Text())
	return chat.Section{}
}

func stuckLoops(stuck []heartbeat.Stuck) []string {
	var out []string
	for _, s := range stuck {
		out = append(out, s.Loop)
	}
	return out
}

// When the chat refuses the alert's message, its run goes on and posts on
// its own; alerts right after do not wait for the chat; the resolution
// goes in the run's thread.
func TestAlertRunsWhenChatFails(t *testing.T) {
	t.Parallel()
	h := newAlertHarness(t)
	h.rec.FailNext(chattest.OpPost, errors.New("channel_not_found"))
	h.accepted(fixture(t, "firing.json"))
	h.accepted(bytes.ReplaceAll(fixture(t, "firing.json"), []byte("abcc45788bcf7aa8"), []byte("0000000000000002")))
	h.settle()
	runs := h.runs()
	require.Len(t, runs, 2)
	for _, r := range runs {
		require.NotNil(t, r.Message, "the run posted its own message")
		require.Equal(t, alertsChan, r.Message.Channel)
	}
	refused := h.rec.Refusals()
	require.Len(t, refused, 1, "one alert message was tried and refused; the second alert did not try")
	require.Contains(t, refused[0].Message.Text(), "Fingerprint")
	require.Empty(t, h.alertMessages("HighErrorRate"))
	require.Contains(t, h.logs.String(), "alert message skipped while the chat fails")

	h.accepted(fixture(t, "resolved.json"))
	h.settle()
	st, err := h.store.GetAlert(t.Context(), "abcc45788bcf7aa8")
	require.NoError(t, err)
	run, err := h.store.GetRun(t.Context(), st.RunID)
	require.NoError(t, err)
	inThread := h.thread(run.Message.ID)
	require.Len(t, inThread, 1)
	require.Contains(t, inThread[0].Message.Text(), "HighErrorRate resolved")
}

// An alert recorded (and so acknowledged) by another replica that died
// before it queued the run is run by this one, whose intake loop runs on:
// the periodic check queues alerts left without a run for orphanGrace.
func TestAlertAcceptedByADeadReplicaIsRun(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{t: time.Now()}
	h := newAlertHarness(t, func(s *alertSetup) { s.now = clock.Now })
	// The intake loop first queues what was accepted before it started
	// (and then beats): the alert must come after that, as from a replica
	// that is running, or the start-up recovery would run it at once.
	require.Eventually(t, h.beat.AllBeat, 10*time.Second, 10*time.Millisecond)
	alerts, err := parseAlertmanager(fixture(t, "firing.json"))
	require.NoError(t, err)
	raw, err := json.Marshal(alerts[0])
	require.NoError(t, err)
	st, err := h.store.RecordAlert(t.Context(), alerts[0].Fingerprint, raw, clock.Now())
	require.NoError(t, err)
	require.True(t, st.Fresh)

	// Within the grace, the replica that accepted it may still queue it.
	clock.Advance(orphanGrace - time.Second)
	time.Sleep(3 * alertsTick)
	require.Empty(t, h.runs())

	clock.Advance(orphanCheckEvery)
	h.wait(func(posts []chattest.Post) bool { return len(posts) > 0 })
	h.settle()
	require.NoError(t, h.disp.Idle(t.Context()))
	runs := h.runs()
	require.Len(t, runs, 1)
	require.Equal(t, store.RunFinished, runs[0].Status)

	// Later checks find its run and queue nothing more.
	clock.Advance(orphanCheckEvery)
	time.Sleep(3 * alertsTick)
	require.NoError(t, h.disp.Idle(t.Context()))
	require.Len(t, h.runs(), 1)
}

// failingEnqueue fails the next n Enqueue calls, as a store whose primary
// was just lost does.
type failingEnqueue struct {
	store.Store
	left atomic.Int32
}

func (f *failingEnqueue) Enqueue(ctx context.Context, w store.Work) (store.Work, bool, error) {
	if f.left.Add(-1) >= 0 {
		return store.Work{}, false, errors.New("begin: failed to connect: connection refused")
	}
	return f.Store.Enqueue(ctx, w)
}

// An alert this replica accepted (and acknowledged) whose run it then
// could not queue, because the store failed right between the two, is
// not lost: the periodic orphan check queues it once orphanGrace has
// passed, as it would for a replica that died in between.
func TestAlertWhoseRunCouldNotBeQueuedIsRunLater(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{t: time.Now()}
	failing := &failingEnqueue{}
	failing.left.Store(1)
	h := newAlertHarness(t, func(s *alertSetup) {
		s.now = clock.Now
		s.dispatchStore = func(st store.Store) store.Store { failing.Store = st; return failing }
	})
	require.Eventually(t, h.beat.AllBeat, 10*time.Second, 10*time.Millisecond)
	h.accepted(fixture(t, "firing.json"))
	require.Eventually(t, func() bool { return strings.Contains(h.logs.String(), "alert run not queued") }, 10*time.Second, 10*time.Millisecond)
	require.Empty(t, h.runs())

	clock.Advance(orphanGrace + orphanCheckEvery)
	ok := assert.Eventually(t, func() bool { return len(h.runs()) > 0 }, 10*time.Second, 10*time.Millisecond)
	require.True(t, ok, "the orphan check queues the run:\n%s", h.logs.String())
	h.settle()
	require.NoError(t, h.disp.Idle(t.Context()))
	runs := h.runs()
	require.Len(t, runs, 1, "the accepted alert got its run")
	require.Equal(t, store.RunFinished, runs[0].Status)
	alert, ok := h.alertPost("HighErrorRate")
	require.True(t, ok, "the alert's message was posted")
	require.NotNil(t, runs[0].Message)
	var threaded []string
	for _, p := range h.thread(alert.Ref.ID) {
		threaded = append(threaded, p.Ref.ID)
	}
	require.Contains(t, threaded, runs[0].Message.ID, "the run posts in the alert's thread, as it would have")

	clock.Advance(orphanCheckEvery)
	time.Sleep(3 * alertsTick)
	require.NoError(t, h.disp.Idle(t.Context()))
	require.Len(t, h.runs(), 1, "and only one")
}

// A store that cannot record the alert answers 503 with Retry-After, which
// is what makes Alertmanager deliver it again, and nothing is half-taken.
func TestStoreFailureAsksToDeliverAgain(t *testing.T) {
	t.Parallel()
	h := newAlertHarness(t)
	require.NoError(t, h.store.Close())
	code, body, hdr := h.deliver("/alerts/alertmanager", fixture(t, "firing.json"), bearer(alertToken))
	require.Equal(t, http.StatusServiceUnavailable, code, body)
	require.Equal(t, "5", hdr.Get("Retry-After"))
	require.Contains(t, body, "could not record the alert; deliver again later")
	require.Zero(t, h.alerts.QueueDepth(), "no queue slot is held for it")
}
