package schedule

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/chat/chattest"
	"github.com/runbot/runbot/dispatch"
	"github.com/runbot/runbot/internal/cronspec"
	"github.com/runbot/runbot/store"
	"github.com/runbot/runbot/store/storetest"
)

// tickAt names the tick a job firing at t runs, the same on every replica.
func TestTickAt(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.DateTime, s)
		require.NoError(t, err)
		return v
	}
	for _, tc := range []struct {
		spec string
		now  string
		want string
	}{
		{"*/5 * * * *", "2026-12-02 03:10:00", "2026-12-02 03:10:00"},
		{"*/5 * * * *", "2026-12-02 03:14:59", "2026-12-02 03:10:00"},
		{"*/10 * * * * *", "2026-12-02 03:10:25", "2026-12-02 03:10:20"},
		{"0 9 * * *", "2026-12-02 08:59:59", "2026-12-01 09:00:00"},
		{"0 9 1 * *", "2026-12-02 08:00:00", "2026-12-01 09:00:00"},
		{"@every 10m", "2026-12-02 03:17:00", "2026-12-02 03:10:00"},
	} {
		t.Run(tc.spec+" at "+tc.now, func(t *testing.T) {
			sched, err := cronspec.Parse("CRON_TZ=UTC " + tc.spec)
			if err != nil {
				sched, err = cronspec.Parse(tc.spec)
			}
			require.NoError(t, err)
			require.Equal(t, at(tc.want), tickAt(sched, at(tc.now)).UTC())
		})
	}
	_, isEvery := any(cron.Every(time.Minute)).(cron.ConstantDelaySchedule)
	require.True(t, isEvery)
}

// clusterReplica is one replica's scheduler over its own store handle on
// the shared database, with a lease it renews until it is killed.
type clusterReplica struct {
	name  string
	st    *store.Postgres
	sched *Scheduler
	disp  *dispatch.Dispatcher
	stop  context.CancelFunc
	done  chan struct{}
}

// clusterFires records which replica ran which tick.
type clusterFires struct {
	mu    sync.Mutex
	fires map[string][]string // fireKey(schedule, tick) -> replicas that ran it
	// hang, when set, makes the first audit of that tick never end, as
	// if the replica running it froze and died; hanged is set once it did.
	hang   time.Time
	hanged bool
	// hung is the replica that got the hanging tick.
	hung chan string
}

const (
	clusterSchedule = "audit-api"
	dailySchedule   = "audit-daily"
)

func fireKey(schedule string, tick time.Time) string {
	return schedule + "@" + tick.UTC().Format(time.DateTime)
}

func startReplica(t *testing.T, dsn, name string, f *clusterFires) *clusterReplica {
	t.Helper()
	// synctest's clock stands for the database's as well (WithNow): the
	// hours it skips do not pass on the real server, whose clock the
	// store would otherwise judge leases by.
	st, err := store.OpenPostgres(t.Context(), dsn, store.WithOwner(name), store.WithNow(time.Now))
	require.NoError(t, err)
	r := &clusterReplica{name: name, st: st, done: make(chan struct{})}
	_, err = st.Heartbeat(t.Context(), store.DefaultLeaseTTL)
	require.NoError(t, err)
	r.disp = testDispatcher(t, testCatalog(t, "testdata/runbooks"), dispatch.Config{RunTimeout: time.Hour})
	r.sched, err = New(Config{TimeZone: "UTC", Schedules: []Schedule{
		{Name: clusterSchedule, Runbook: "service-errors", Cron: "*/5 * * * *", Params: map[string]string{"host": "here", "service": "api"}},
		{Name: dailySchedule, Runbook: "service-errors", Cron: "0 1 * * *", Params: map[string]string{"host": "here", "service": "db"}},
	}}, r.disp, Deps{TriggerDeps: dispatch.TriggerDeps{Logger: slog.New(slog.DiscardHandler)}, Ticks: st})
	require.NoError(t, err)
	r.sched.audit = func(ctx context.Context, e *scheduled) auditResult {
		tick := tickAt(e.sched, time.Now())
		if e.Name != clusterSchedule && e.Name != dailySchedule {
			return auditResult{Outcome: store.OutcomeOK}
		}
		f.mu.Lock()
		// A catch-up runs an earlier tick than the one now due: the
		// store knows which; the latest claim by this replica is it.
		ticks, err := st.Ticks(ctx, e.Name, 0)
		if err == nil {
			for _, tk := range ticks {
				if tk.Owner == name && tk.State == store.TickClaimed {
					tick = tk.At
					break
				}
			}
		}
		key := fireKey(e.Name, tick)
		f.fires[key] = append(f.fires[key], name)
		hang := e.Name == clusterSchedule && tick.Equal(f.hang) && !f.hanged
		f.hanged = f.hanged || hang
		f.mu.Unlock()
		if hang {
			f.hung <- name
			<-ctx.Done()
		}
		return auditResult{RunID: fmt.Sprintf("run-%s-%s", name, tick.Format("1504")), Outcome: store.OutcomeOK}
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	r.stop = cancel
	go func() {
		defer close(r.done)
		var wg sync.WaitGroup
		wg.Go(func() { _ = r.sched.Run(ctx) })
		// The lease is renewed like KeepAlive does, except that a killed
		// replica does not resign: it just stops renewing.
		wg.Go(func() {
			tick := time.NewTicker(store.DefaultHeartbeat)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
					_, _ = st.Heartbeat(ctx, store.DefaultLeaseTTL)
				}
			}
		})
		wg.Wait()
	}()
	return r
}

// kill stops the replica's scheduler and lease renewals without a word to
// the others, and cancels its audits (it is gone; they never finish).
func (r *clusterReplica) kill(t *testing.T) {
	t.Helper()
	r.stop()
	<-r.done
	// The store goes first, so that nothing the replica still does gets
	// recorded: a killed process records nothing more.
	require.NoError(t, r.st.Close())
	ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), time.Millisecond)
	defer cancel()
	_ = r.disp.Shutdown(ctx) // cancels the hanging audit
}

// Three replicas schedule an audit every 5 minutes and one daily on one
// PostgreSQL database, at the production lease, grace and check intervals
// (synctest's clock). Each tick runs exactly once across them. The replica
// that runs the third tick freezes mid-audit and is killed: once its lease
// expired, another replica catches that tick up (recorded as a catch-up
// taken over from the dead one), and the ticks after it keep firing once
// each. Then the whole cluster is down for 20 minutes: a replica started
// after it catches up the most recent missed tick, and only that one. A
// daily tick missed by more than CatchUpWindow is recorded as missed, not
// run.
func TestScheduleFiresOncePerTickAcrossReplicas(t *testing.T) {
	dsn := storetest.PostgresDatabase(t)
	synctest.Test(t, func(t *testing.T) {
		start := time.Now().UTC() // synctest's epoch, 2000-01-01 00:00 UTC: a tick
		f := &clusterFires{fires: map[string][]string{}, hang: start.Add(15 * time.Minute), hung: make(chan string, 1)}
		replicas := map[string]*clusterReplica{}
		for i := range 3 {
			name := fmt.Sprintf("replica-%d", i)
			replicas[name] = startReplica(t, dsn, name, f)
		}

		// Past the hanging tick at +15m: it is claimed by one replica,
		// which is killed.
		time.Sleep(15*time.Minute + time.Second)
		synctest.Wait()
		dead := <-f.hung
		replicas[dead].kill(t)
		delete(replicas, dead)

		// Ticks at +20m .. +60m, and the catch-up of +15m in between.
		time.Sleep(45*time.Minute + time.Second)
		synctest.Wait()
		for _, r := range replicas {
			r.kill(t)
		}

		f.mu.Lock()
		for i := 5; i <= 60; i += 5 {
			tick := start.Add(time.Duration(i) * time.Minute)
			want := 1
			if tick.Equal(f.hang) {
				want = 2 // the dead replica's run, then the catch-up
			}
			require.Len(t, f.fires[fireKey(clusterSchedule, tick)], want, "tick +%dm: %v", i, f.fires[fireKey(clusterSchedule, tick)])
		}
		require.NotEqual(t, dead, f.fires[fireKey(clusterSchedule, f.hang)][1], "another replica caught up the dead one's tick")
		require.Len(t, f.fires[fireKey(dailySchedule, start.Add(time.Hour))], 1, "the daily audit ran once at 01:00")
		f.mu.Unlock()

		check, err := store.OpenPostgres(t.Context(), dsn, store.WithOwner("checker"))
		require.NoError(t, err)
		defer func() { require.NoError(t, check.Close()) }()
		ticks, err := check.Ticks(t.Context(), clusterSchedule, 0)
		require.NoError(t, err)
		require.Len(t, ticks, 12, "one row per tick, +5m to +60m")
		for _, tk := range ticks {
			require.Equal(t, store.TickDone, tk.State, "tick %s", tk.At)
			require.Equal(t, tk.At.Equal(f.hang), tk.CatchUp, "tick %s", tk.At)
			if tk.CatchUp {
				require.Equal(t, dead, tk.TakenOverFrom)
				require.LessOrEqual(t, tk.ClaimedAt.Sub(tk.At), catchUpGrace+store.DefaultLeaseTTL+catchUpEvery,
					"caught up soon after the lease expired")
			}
		}

		// The cluster is down for 20 minutes (ticks +65m .. +80m); one
		// replica starts again and catches up +80m only.
		time.Sleep(20*time.Minute - time.Second)
		back := startReplica(t, dsn, "replica-back", f)
		time.Sleep(2*time.Minute + catchUpEvery)
		synctest.Wait()
		back.kill(t)
		f.mu.Lock()
		for _, m := range []int{65, 70, 75} {
			require.Empty(t, f.fires[fireKey(clusterSchedule, start.Add(time.Duration(m)*time.Minute))], "+%dm is older than the most recent missed tick", m)
		}
		require.Equal(t, []string{"replica-back"}, f.fires[fireKey(clusterSchedule, start.Add(80*time.Minute))], "the most recent missed tick is caught up")
		f.mu.Unlock()

		// The cluster is down from before the next day's 01:00 until
		// 02:30: the daily tick is the most recent one missed, but over
		// CatchUpWindow old at the first check, so it is recorded as
		// missed, not run.
		time.Sleep(time.Until(start.Add(24*time.Hour + 150*time.Minute)))
		late := startReplica(t, dsn, "replica-late", f)
		time.Sleep(catchUpEvery + time.Second)
		synctest.Wait()
		late.kill(t)
		day2 := start.Add(25 * time.Hour)
		f.mu.Lock()
		require.Empty(t, f.fires[fireKey(dailySchedule, day2)])
		f.mu.Unlock()
		daily, err := check.Ticks(t.Context(), dailySchedule, 0)
		require.NoError(t, err)
		require.Len(t, daily, 2)
		require.Equal(t, day2, daily[0].At)
		require.Equal(t, store.TickMissed, daily[0].State)
		require.Equal(t, "replica-late", daily[0].Owner)
	})
}

// Two replicas configured with the daily summary post it once per tick
// between them: the summary claims its tick like an audit does.
func TestSummaryPostedOncePerTickAcrossReplicas(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "runbot.db")
		var stores []*store.SQLite
		var scheds []*Scheduler
		chats := []*chattest.Recorder{chattest.New(), chattest.New()}
		for i := range 2 {
			st, err := store.Open(t.Context(), path, store.WithOwner(fmt.Sprintf("replica-%d", i)))
			require.NoError(t, err)
			stores = append(stores, st)
			d := testDispatcher(t, testCatalog(t, "testdata/runbooks"), dispatch.Config{RunTimeout: time.Hour})
			s, err := New(Config{TimeZone: "UTC", Summary: "0 9 * * *"}, d, Deps{
				TriggerDeps: dispatch.TriggerDeps{Store: st, Chat: chats[i], Logger: slog.New(slog.DiscardHandler)}, Ticks: st})
			require.NoError(t, err)
			s.audit = func(context.Context, *scheduled) auditResult { return auditResult{Outcome: store.OutcomeOK} }
			scheds = append(scheds, s)
		}
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		for _, s := range scheds {
			wg.Go(func() { _ = s.Run(ctx) })
		}
		time.Sleep(2*24*time.Hour + time.Minute)
		synctest.Wait()
		cancel()
		wg.Wait()
		ticks, err := stores[0].Ticks(t.Context(), summaryTicks, 0)
		require.NoError(t, err)
		require.Len(t, ticks, 2, "one summary a day")
		for _, tk := range ticks {
			require.Equal(t, store.TickDone, tk.State)
			require.Equal(t, 9, tk.At.Hour())
		}
		require.Equal(t, 2, len(chats[0].Posts())+len(chats[1].Posts()), "posted once a day between the two")
		for _, st := range stores {
			require.NoError(t, st.Close())
		}
	})
}
