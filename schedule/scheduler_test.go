package schedule

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
	_ "time/tzdata" // the time zone tests do not depend on the machine's zoneinfo

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/chat"
	"github.com/runbot/runbot/chat/chattest"
	"github.com/runbot/runbot/dispatch"
	"github.com/runbot/runbot/internal/heartbeat"
	"github.com/runbot/runbot/internal/syncbuf"
	"github.com/runbot/runbot/inventory"
	"github.com/runbot/runbot/runbooks/bind"
	"github.com/runbot/runbot/runbooks/catalog"
	"github.com/runbot/runbot/runbooks/engine"
	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/store"
)

// scheduleHarness is a scheduler over a real dispatcher: the SQLite
// store, the engine running the test runbooks on this machine, and the
// recording chat (no Slack).
type scheduleHarness struct {
	t     *testing.T
	chat  *chattest.Recorder
	disp  *dispatch.Dispatcher
	sched *Scheduler
	store *store.SQLite
	reg   *prometheus.Registry
	dir   string
}

const opsChan = "C0OPS"

func testCatalog(t *testing.T, dir string) *catalog.Catalog {
	t.Helper()
	c, problems, err := catalog.Load(dir)
	require.NoError(t, err)
	require.Empty(t, problems)
	return c
}

func newScheduleHarness(t *testing.T, cfg func(dir string) Config) *scheduleHarness {
	t.Helper()
	h := &scheduleHarness{t: t, chat: chattest.New(), dir: t.TempDir(), reg: prometheus.NewRegistry()}
	st, err := store.Open(t.Context(), filepath.Join(t.TempDir(), "runbot.db"))
	require.NoError(t, err)
	h.store = st
	cat := testCatalog(t, "testdata/runbooks")
	inv, err := inventory.Load("testdata/inventory.yaml")
	require.NoError(t, err)
	eng := &engine.Engine{Targets: &bind.InventoryTargets{Inventory: inv, Runners: bind.LocalRunners{}}}
	rem := &remediation.Remediator{Engine: eng, Store: st, Catalog: cat}
	logger := slog.New(slog.NewTextHandler(&syncbuf.Buffer{}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h.disp, err = dispatch.New(dispatch.Config{Channel: opsChan, UpdateInterval: 10 * time.Millisecond}, dispatch.Deps{
		Catalog: cat, Engine: eng, Remediator: rem, Store: st, Chat: h.chat, Logger: logger,
	})
	require.NoError(t, err)
	h.sched, err = New(cfg(h.dir), h.disp, Deps{TriggerDeps: dispatch.TriggerDeps{Store: st, Chat: h.chat, Logger: logger}, Fleet: &bind.Fleet{Inventory: inv}})
	require.NoError(t, err)
	require.NoError(t, h.reg.Register(h.sched))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, h.disp.Shutdown(ctx))
		require.NoError(t, st.Close())
	})
	return h
}

func (h *scheduleHarness) entry(name string) *scheduled {
	h.t.Helper()
	for _, e := range h.sched.entries {
		if e.Name == name {
			return e
		}
	}
	h.t.Fatalf("no schedule %q", name)
	return nil
}

// postsOf returns the texts of the result messages posted for a schedule.
func (h *scheduleHarness) postsOf(name string) []string {
	var out []string
	for _, p := range h.chat.Posts() {
		if text := p.Last().Text(); strings.Contains(text, fmt.Sprintf("Scheduled audit %q", name)) {
			out = append(out, text)
		}
	}
	return out
}

func serviceSchedule(name, dir string, post PostPolicy) Schedule {
	return Schedule{Name: name, Runbook: "service-errors", Cron: "*/10 * * * *", Post: post,
		Params: map[string]string{"host": "here", "service": "api", "dir": dir}}
}

// Each policy posts what it promises over a service that fails, fails
// again, recovers, stays healthy and fails again; every run is recorded
// either way.
func TestSchedulePostPolicies(t *testing.T) {
	t.Parallel()
	h := newScheduleHarness(t, func(dir string) Config {
		return Config{Schedules: []Schedule{
			serviceSchedule("always", dir, PostAlways),
			serviceSchedule("on-change", dir, PostOnChange),
			serviceSchedule("on-failure", dir, PostOnFailure),
		}, Summary: "0 9 * * *", SummaryChannel: "C0SUMMARY"}
	})
	healthy := filepath.Join(h.dir, "healthy")
	steps := []struct {
		healthy bool
		posted  map[string]bool
	}{
		{false, map[string]bool{"always": true, "on-change": true, "on-failure": true}},
		{false, map[string]bool{"always": true, "on-change": false, "on-failure": true}},
		{true, map[string]bool{"always": true, "on-change": true, "on-failure": false}},
		{true, map[string]bool{"always": true, "on-change": false, "on-failure": false}},
		{false, map[string]bool{"always": true, "on-change": true, "on-failure": true}},
	}
	var reasons []string
	for i, step := range steps {
		if step.healthy {
			require.NoError(t, os.WriteFile(healthy, nil, 0o600))
		} else {
			require.NoError(t, os.RemoveAll(healthy))
		}
		for _, name := range []string{"always", "on-change", "on-failure"} {
			res := h.sched.runAudit(t.Context(), h.entry(name))
			require.NoError(t, res.Err)
			require.Equal(t, step.posted[name], res.Posted, "step %d, %s: %s", i+1, name, res.Reason)
			if name == "on-change" {
				reasons = append(reasons, res.Reason)
			}
		}
	}
	require.Equal(t, []string{
		"first run, and the outcome is critical (service_erroring)",
		"unchanged: critical (service_erroring)",
		"changed from critical (service_erroring) to ok (service_ok)",
		"unchanged: ok (service_ok)",
		"changed from ok (service_ok) to critical (service_erroring)",
	}, reasons)
	require.Len(t, h.postsOf("always"), 5)
	require.Len(t, h.postsOf("on-change"), 3)
	require.Len(t, h.postsOf("on-failure"), 3)
	changed := h.postsOf("on-change")[1]
	require.Contains(t, changed, "Service error rate")
	require.Contains(t, changed, "Trigger: schedule on-change")
	require.Contains(t, changed, `Scheduled audit "on-change" (*/10 * * * *): changed from critical (service_erroring) to ok (service_ok).`)
	// The message counts the steps of its report (it said "0 of 0").
	require.Contains(t, changed, "1 of 1 step runs completed.")

	runs, err := h.store.ListRuns(t.Context(), store.RunFilter{Trigger: store.TriggerSchedule})
	require.NoError(t, err)
	require.Len(t, runs, 15, "quiet runs are recorded too")
	posted := map[string]int{}
	for _, r := range runs {
		require.Equal(t, store.RunFinished, r.Status)
		if r.Message != nil {
			posted[r.RequestedBy]++
		}
	}
	require.Equal(t, map[string]int{"always": 5, "on-change": 3, "on-failure": 3}, posted, "a posted run knows its message")

	// The daily summary shows the quiet runs as well.
	sum, err := h.sched.summaryView(t.Context())
	require.NoError(t, err)
	text := sum.Text()
	require.Contains(t, text, "Scheduled audits: the last 24 hours")
	require.Contains(t, text, "5 run(s): critical 3, ok 2; 5 posted")
	require.Contains(t, text, "5 run(s): critical 3, ok 2; 3 posted")
	require.Contains(t, text, "nightly-audit host=here")
	require.Contains(t, text, "No run in the last 24 hours (30 2 * * *)")
	require.Equal(t, chat.StatusCritical, sum.Status, "the latest runs are critical")
	h.sched.postSummary(t.Context())
	var summaries []string
	for _, p := range h.chat.Posts() {
		if p.Ref.Channel == "C0SUMMARY" {
			summaries = append(summaries, p.Last().Text())
		}
	}
	require.Len(t, summaries, 1)
	require.Contains(t, summaries[0], "5 run(s): critical 3, ok 2; 3 posted")
}

// A runbook's own triggers.schedule is picked up with its params; a
// configured schedule of the same runbook replaces it.
func TestScheduleFromRunbooks(t *testing.T) {
	t.Parallel()
	h := newScheduleHarness(t, func(string) Config { return Config{} })
	require.Equal(t, []Schedule{{Name: "nightly-audit host=here", Runbook: "nightly-audit", Cron: "30 2 * * *",
		Params: map[string]string{"host": "here"}, Post: PostOnChange}}, h.sched.Schedules())

	h2 := newScheduleHarness(t, func(string) Config {
		return Config{Schedules: []Schedule{{Runbook: "nightly-audit", Cron: "@hourly", Params: map[string]string{"host": "here"}, Post: PostAlways}}}
	})
	require.Len(t, h2.sched.Schedules(), 1)
	require.Equal(t, "@hourly", h2.sched.Schedules()[0].Cron)
}

func TestNewSchedulerRefusesMistakes(t *testing.T) {
	t.Parallel()
	cat := testCatalog(t, "testdata/runbooks")
	d := testDispatcher(t, cat, dispatch.Config{})
	ok := Schedule{Runbook: "nightly-audit", Cron: "0 3 * * *", Params: map[string]string{"host": "here"}}
	for name, tc := range map[string]struct {
		mod  func(*Schedule)
		want string
	}{
		"unknown runbook": {func(s *Schedule) { s.Runbook = "nightly-audti" }, `unknown runbook "nightly-audti" (did you mean "nightly-audit"?)`},
		"missing param":   {func(s *Schedule) { s.Params = nil }, "param host: is required"},
		"unknown param":   {func(s *Schedule) { s.Params["hots"] = "x" }, `param hots: no such param`},
		"bad cron":        {func(s *Schedule) { s.Cron = "0 25 * * *" }, `cron "0 25 * * *"`},
		"bad time zone":   {func(s *Schedule) { s.TimeZone = "Mars/Olympus" }, `time zone "Mars/Olympus"`},
		"two time zones":  {func(s *Schedule) { s.Cron = "CRON_TZ=UTC 0 3 * * *"; s.TimeZone = "UTC" }, "names a time zone and time_zone is set too"},
		"bad policy":      {func(s *Schedule) { s.Post = "sometimes" }, `post "sometimes": want always, on_change or on_failure`},
	} {
		sc := ok
		sc.Params = map[string]string{"host": "here"}
		tc.mod(&sc)
		_, err := New(Config{Schedules: []Schedule{sc}}, d, Deps{})
		require.ErrorContains(t, err, tc.want, name)
	}
	_, err := New(Config{Schedules: []Schedule{ok, ok}}, d, Deps{})
	require.ErrorContains(t, err, `name "nightly-audit host=here" is used twice`)
	_, err = New(Config{Schedules: []Schedule{ok}, Summary: "daily"}, d, Deps{})
	require.ErrorContains(t, err, `summary schedule "daily"`)
}

// testDispatcher is a dispatcher over catalog for tests that never run
// anything through it: it has no engine targets and no store.
func testDispatcher(t *testing.T, cat *catalog.Catalog, cfg dispatch.Config) *dispatch.Dispatcher {
	t.Helper()
	var noStore store.Store = (*store.SQLite)(nil)
	d, err := dispatch.New(cfg, dispatch.Deps{
		Catalog: cat, Engine: &engine.Engine{}, Remediator: &remediation.Remediator{}, Store: noStore,
		Logger: slog.New(slog.DiscardHandler),
	})
	require.NoError(t, err)
	return d
}

// bubbleScheduler builds, inside a synctest bubble, a scheduler whose
// audits are fake: they run fn and are recorded with the (fake) time.
type bubbleScheduler struct {
	s    *Scheduler
	d    *dispatch.Dispatcher
	reg  *prometheus.Registry
	beat *heartbeat.Monitor

	mu    sync.Mutex
	fired []string
}

func newBubbleScheduler(t *testing.T, cfg Config, fn func(n int)) *bubbleScheduler {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	b := &bubbleScheduler{reg: prometheus.NewRegistry(), beat: heartbeat.New(nil)}
	b.d = testDispatcher(t, testCatalog(t, "testdata/runbooks"), dispatch.Config{RunTimeout: time.Hour})
	var err error
	b.s, err = New(cfg, b.d, Deps{TriggerDeps: dispatch.TriggerDeps{Heartbeat: b.beat, Logger: log}})
	require.NoError(t, err)
	require.NoError(t, b.reg.Register(b.s))
	b.s.audit = func(ctx context.Context, e *scheduled) auditResult {
		b.mu.Lock()
		n := len(b.fired)
		b.fired = append(b.fired, e.Name+"@"+time.Now().UTC().Format(time.DateTime))
		b.mu.Unlock()
		if fn != nil {
			fn(n)
		}
		return auditResult{Outcome: store.OutcomeOK}
	}
	return b
}

// run runs the scheduler for d of fake time.
func (b *bubbleScheduler) run(t *testing.T, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- b.s.Run(ctx) }()
	time.Sleep(d)
	synctest.Wait()
	require.Empty(t, b.beat.Check(), "the scheduler loop beats")
	cancel()
	require.NoError(t, <-done)
	require.NoError(t, b.d.Shutdown(t.Context()))
}

func (b *bubbleScheduler) calls() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.fired...)
}

// Schedules fire at their times in their own time zones; runbooks'
// schedules in the scheduler's zone.
func TestScheduleFiresInTimeZones(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The bubble's clock starts at 2000-01-01 00:00:00 UTC.
		b := newBubbleScheduler(t, Config{TimeZone: "UTC", Schedules: []Schedule{
			{Name: "new-york-morning", Runbook: "service-errors", Cron: "0 9 * * *", TimeZone: "America/New_York",
				Params: map[string]string{"host": "here", "service": "api"}},
			{Name: "seconds", Runbook: "service-errors", Cron: "30 0 0 * * *", Params: map[string]string{"host": "here", "service": "api"}},
		}}, nil)
		b.run(t, 48*time.Hour)
		require.Equal(t, []string{
			"seconds@2000-01-01 00:00:30",
			"nightly-audit host=here@2000-01-01 02:30:00",
			"new-york-morning@2000-01-01 14:00:00", // 09:00 EST
			"seconds@2000-01-02 00:00:30",
			"nightly-audit host=here@2000-01-02 02:30:00",
			"new-york-morning@2000-01-02 14:00:00",
		}, b.calls())
	})
}

// A run still going when its schedule ticks again is not overlapped: the
// tick is skipped and counted.
func TestScheduleSkipsOverlap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBubbleScheduler(t, Config{TimeZone: "UTC", Schedules: []Schedule{
			{Name: "slow", Runbook: "service-errors", Cron: "*/10 * * * * *", Params: map[string]string{"host": "here", "service": "api"}},
		}}, func(int) { time.Sleep(25 * time.Second) })
		b.run(t, 61*time.Second)
		// Runs at :10 (until :35) and :40 (until 1:05); :20, :30, :50
		// and 1:00 are skipped.
		require.Equal(t, []string{"slow@2000-01-01 00:00:10", "slow@2000-01-01 00:00:40"}, b.calls())
		require.Equal(t, 4.0, gathered(t, b.reg, "runbot_schedule_skipped_total"))
		require.Equal(t, int64(4), b.s.entries[0].skipped.Load())
	})
}

// A panic in one run does not stop the scheduler: it is counted, and the
// next tick runs.
func TestScheduleSurvivesPanic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBubbleScheduler(t, Config{TimeZone: "UTC", Schedules: []Schedule{
			{Name: "flaky", Runbook: "service-errors", Cron: "*/10 * * * * *", Params: map[string]string{"host": "here", "service": "api"}},
		}}, func(n int) {
			if n == 0 {
				panic("audit bug")
			}
		})
		b.run(t, 35*time.Second)
		require.Len(t, b.calls(), 3)
		require.Equal(t, 1.0, gathered(t, b.reg, "runbot_schedule_panics_total"))
		require.Equal(t, 2.0, gathered(t, b.reg, "runbot_schedule_runs_total"))
		require.False(t, b.s.entries[0].running.Load())
	})
}

// One real cron tick: a schedule with a seconds field runs the runbook
// for real and posts its result.
func TestScheduleRealTick(t *testing.T) {
	t.Parallel()
	h := newScheduleHarness(t, func(dir string) Config {
		return Config{Schedules: []Schedule{{Name: "every-second", Runbook: "service-errors", Cron: "* * * * * *", Post: PostAlways,
			Params: map[string]string{"host": "here", "service": "api", "dir": dir}}}}
	})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- h.sched.Run(ctx) }()
	posted := func() bool { return len(h.postsOf("every-second")) > 0 }
	for deadline := time.Now().Add(30 * time.Second); !posted() && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	require.NoError(t, <-done)
	require.True(t, posted(), "%d messages posted", len(h.chat.Posts()))
	require.NoError(t, h.disp.Idle(t.Context()))
	runs, err := h.store.ListRuns(t.Context(), store.RunFilter{Trigger: store.TriggerSchedule})
	require.NoError(t, err)
	require.NotEmpty(t, runs)
	require.Equal(t, "every-second", runs[len(runs)-1].RequestedBy)
	require.Equal(t, store.OutcomeCritical, runs[len(runs)-1].Outcome)
	require.Contains(t, h.postsOf("every-second")[0], "The service answers 12% errors.")
}

// gathered sums a metric's samples.
func gathered(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	total := 0.0
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				total += m.GetCounter().GetValue() + m.GetGauge().GetValue()
			}
		}
	}
	return total
}

// A reload's Successor keeps what a schedule of the same name was doing:
// the run a reload finds going still skips the successor's ticks, and both
// count into the same metrics; a schedule it adds starts idle, and one
// naming a runbook the new catalog lacks is refused.
func TestSuccessorKeepsTheStateOfSchedulesThatStay(t *testing.T) { //nolint:tparallel // the cases read one successor built before them
	t.Parallel()
	h := newScheduleHarness(t, func(dir string) Config {
		return Config{Schedules: []Schedule{serviceSchedule("kept", dir, PostAlways)}}
	})
	h.entry("kept").running.Store(true)
	h.sched.metrics.runs.WithLabelValues("kept", "ok").Inc()

	next, err := h.sched.Successor(Config{Schedules: []Schedule{serviceSchedule("kept", h.dir, PostAlways), serviceSchedule("added", h.dir, PostAlways)}},
		Deps{TriggerDeps: dispatch.TriggerDeps{Store: h.store, Chat: h.chat}})
	require.NoError(t, err)
	byName := map[string]*scheduled{}
	for _, e := range next.entries {
		byName[e.Name] = e
	}
	require.True(t, byName["kept"].running.Load(), "the run going at the reload still counts as running")
	require.False(t, byName["added"].running.Load())
	require.Same(t, h.sched.metrics, next.metrics, "the successor counts into the same metrics")

	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"unknown runbook", Config{Schedules: []Schedule{{Runbook: "nope", Cron: "@hourly"}}}, `unknown runbook "nope"`},
		{"bad cron", Config{Schedules: []Schedule{{Name: "bad", Runbook: "service-errors", Cron: "every day", Params: serviceSchedule("x", h.dir, "").Params}}}, `cron "every day"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.sched.Successor(tc.cfg, Deps{TriggerDeps: dispatch.TriggerDeps{Store: h.store, Chat: h.chat}})
			require.ErrorContains(t, err, tc.want)
		})
	}
}
