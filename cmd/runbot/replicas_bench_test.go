package main

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/store"
	"github.com/runbot/runbot/store/storetest"
)

const (
	// benchFingerprints distinct alerts get benchNotifications deliveries
	// in all: the first round new, the other rounds repeats.
	benchFingerprints  = 200
	benchNotifications = 2000
	benchSenders       = 8
	// benchRetry is how long a sender waits before delivering a 503'd
	// notification again, as bench/alerts does.
	benchRetry = 20 * time.Millisecond
	// pgStatsFlush outlasts PostgreSQL's idle flush of a backend's pending
	// statistics (PGSTAT_IDLE_INTERVAL, 10 s), so that a snapshot of
	// pg_stat_database holds what the backends did before it.
	pgStatsFlush = 12 * time.Second
	// idleWindow is how long the background of idle replicas (heartbeats,
	// probes, sweeps) is measured, to be taken out of the storm's figures.
	idleWindow = 15 * time.Second
	// clockTicks is Linux's USER_HZ, the unit of /proc/PID/stat times.
	clockTicks = 100
)

// setupFigures are one setup's measured figures, kept for the ratios of
// the setups after it.
type setupFigures struct {
	acceptedPerSec, runsPerSec float64
}

// BenchmarkReplicas starts real `runbot serve` processes, one setup after
// the other in one invocation: one replica on SQLite, one on PostgreSQL,
// three on one PostgreSQL database (the failover test's cluster, at
// production defaults). Each gets benchNotifications Alertmanager
// notifications for benchFingerprints alerts from benchSenders senders,
// round-robin over its replicas as a load balancer spreads them, and runs
// the failover runbook's quick healthy path (one `cat` on this host) for
// every alert. It reports ingestion (accepted/s, ack latency, 503s),
// run throughput (first notification to the last run done), the ratios
// against SQLite, runbot's and the PostgreSQL backends' memory and CPU,
// and on PostgreSQL the transactions and server time the storm cost.
// The last sub-benchmark counts the statements of one alert-triggered run
// in PostgreSQL's own statement log.
//
//	go test -run '^$' -bench Replicas -benchtime 1x ./cmd/runbot
func BenchmarkReplicas(b *testing.B) {
	var sqlite *setupFigures
	for _, s := range []struct {
		name     string
		replicas int
		postgres bool
	}{{"sqlite-1", 1, false}, {"postgres-1", 1, true}, {"postgres-3", 3, true}} {
		b.Run(s.name, func(b *testing.B) {
			location := filepath.Join(b.TempDir(), "runbot.db")
			if s.postgres {
				location = storetest.PostgresDatabase(b)
			}
			f := benchStorm(b, s.replicas, location)
			if sqlite == nil && !s.postgres {
				sqlite = &f
			}
			if sqlite != nil && s.postgres {
				b.ReportMetric(f.acceptedPerSec/sqlite.acceptedPerSec, "accepted-ratio-vs-sqlite")
				b.ReportMetric(f.runsPerSec/sqlite.runsPerSec, "runs-ratio-vs-sqlite")
			}
		})
	}
	b.Run("postgres-1-statements", benchStatements)
}

// benchStorm runs the storm on n replicas of the store at location and
// reports its figures.
func benchStorm(b *testing.B, n int, location string) setupFigures {
	b.Helper()
	hosts := benchHosts(benchFingerprints)
	c := newClusterOn(b, n, hosts, location)
	for _, h := range hosts {
		c.setState(h, "ok")
	}
	var pg *pgProbe
	if strings.HasPrefix(location, "postgres") {
		pg = openPGProbe(b, location)
		// What the replicas did to start is flushed to the statistics
		// before the background is measured.
		time.Sleep(pgStatsFlush)
	}
	var idle pgRates
	if pg != nil {
		idle = pg.idleRates(b)
	}
	cpu0 := c.replicaCPU(b)
	var db0 pgSnapshot
	if pg != nil {
		db0 = pg.snapshot(b)
	}
	sampler := startMemSampler(b, pg)
	res := c.storm(b, hosts, benchNotifications, benchSenders)
	c.waitRunsFinished(b, len(hosts), 5*time.Minute)
	sampler.stop()
	cpu1 := c.replicaCPU(b)
	var backends []memFigures
	if pg != nil {
		time.Sleep(pgStatsFlush)
		db1 := pg.snapshot(b)
		backends = sampler.backends(db1.apps)
		d := db1.minus(db0, idle)
		b.ReportMetric(d.xacts/benchFingerprints, "db-xact/run")
		b.ReportMetric(d.activeMS/benchFingerprints, "db-ms/run")
	}
	last := c.verifyOneRunEach(b, hosts)
	// Where a run's time goes: waiting from its alert's first delivery
	// until it started, and running.
	var waits, runs []time.Duration
	all, err := c.st.ListRuns(b.Context(), store.RunFilter{Runbook: "failover", Limit: 10 * len(hosts)})
	require.NoError(b, err)
	for _, r := range all {
		a, err := c.st.GetAlert(b.Context(), "fp-"+r.Params["svc"])
		require.NoError(b, err)
		waits = append(waits, r.StartedAt.Sub(a.FirstSeen))
		runs = append(runs, r.FinishedAt.Sub(r.StartedAt))
	}
	slices.Sort(waits)
	slices.Sort(runs)
	b.ReportMetric(pct(waits, 50).Seconds(), "alert-to-run-start-p50-s")
	b.ReportMetric(pct(runs, 50).Seconds(), "run-p50-s")
	runsPerSec := float64(len(hosts)) / last.Sub(res.start).Seconds()
	slices.Sort(res.latencies)
	accepted := float64(len(res.latencies)) / res.elapsed.Seconds()
	b.ReportMetric(accepted, "accepted/s")
	b.ReportMetric(ms(pct(res.latencies, 50)), "p50-ack-ms")
	b.ReportMetric(ms(pct(res.latencies, 99)), "p99-ack-ms")
	b.ReportMetric(float64(res.unavailable), "503s")
	b.ReportMetric(runsPerSec, "runs/s")
	b.ReportMetric(last.Sub(res.start).Seconds(), "first-alert-to-last-done-s")

	var rss, hwm int64
	for _, r := range c.replicas {
		m := readStatus(b, r.cmd.Process.Pid)
		rss += m.rss
		hwm = max(hwm, m.hwm)
	}
	b.ReportMetric(float64(rss)/float64(len(c.replicas))/1024, "runbot-rss-MiB")
	b.ReportMetric(float64(hwm)/1024, "runbot-peak-rss-MiB")
	self, children := cpu1.minus(cpu0)
	b.ReportMetric(self*1000/benchFingerprints, "runbot-cpu-ms/run")
	b.ReportMetric(children*1000/benchFingerprints, "commands-cpu-ms/run")
	if pg != nil {
		var priv, rssKiB, cpuS float64
		for _, m := range backends {
			priv += float64(m.private)
			rssKiB += float64(m.rss)
			cpuS += m.cpu
		}
		k := float64(max(len(backends), 1))
		b.ReportMetric(float64(len(backends)), "pg-backends")
		b.ReportMetric(priv/k, "pg-backend-private-KiB")
		b.ReportMetric(rssKiB/k, "pg-backend-rss-KiB")
		b.ReportMetric(cpuS*1000/benchFingerprints, "pg-backends-cpu-ms/run")
	}
	b.Logf("%d replicas, %d notifications for %d alerts from %d senders: %d acknowledged in %s, %d answered 503 and delivered again; %d runs, one per alert, the last done %s after the first notification",
		n, benchNotifications, len(hosts), benchSenders, len(res.latencies), res.elapsed.Round(time.Millisecond), res.unavailable, len(hosts), last.Sub(res.start).Round(time.Millisecond))
	return setupFigures{acceptedPerSec: accepted, runsPerSec: runsPerSec}
}

// benchStatements counts, in PostgreSQL's statement log
// (log_statement=all, set on the benchmark's database only), the
// statements one replica sends for an alert that starts a run and for a
// repeat folded into it; each statement is one round trip, and a
// statement's first use on a connection one more (its prepare, which the
// log does not show). The idle replica's background is measured first and
// taken out.
func benchStatements(b *testing.B) {
	const alerts = 100
	dsn := storetest.PostgresDatabase(b)
	u, err := url.Parse(dsn)
	require.NoError(b, err)
	name := strings.TrimPrefix(u.Path, "/")
	logPath := filepath.Join(u.Query().Get("host"), "server.log")
	pg := openPGProbe(b, dsn)
	_, err = pg.db.ExecContext(b.Context(), `ALTER DATABASE `+name+` SET log_statement = 'all'`)
	require.NoError(b, err)

	hosts := benchHosts(alerts)
	c := newClusterOn(b, 1, hosts, dsn)
	for _, h := range hosts {
		c.setState(h, "ok")
	}
	time.Sleep(pgStatsFlush)

	// The idle background.
	l0, t0 := logSize(b, logPath), time.Now()
	idle := pg.idleRates(b)
	l1, t1 := logSize(b, logPath), time.Now()
	idleLog := countStatements(b, logPath, l0, l1)
	bgPerSec := float64(idleLog.total) / t1.Sub(t0).Seconds()
	b.ReportMetric(bgPerSec, "idle-statements/s")
	b.ReportMetric(idle.xacts, "idle-xact/s")
	b.Logf("idle replica: %.2f statements/s (by kind over %s: %v), %.2f transactions/s, %.2f ms/s of server time", bgPerSec, t1.Sub(t0).Round(time.Second), idleLog.kinds, idle.xacts, idle.activeMS)

	// New alerts: each starts a run.
	l2, s2 := logSize(b, logPath), pg.snapshot(b)
	res := c.storm(b, hosts, alerts, benchSenders)
	c.waitRunsFinished(b, alerts, 5*time.Minute)
	// What follows a run's end (its last message update) settles.
	time.Sleep(3 * time.Second)
	l3 := logSize(b, logPath)
	logEnd := time.Now()
	time.Sleep(pgStatsFlush)
	s3 := pg.snapshot(b)
	runs := countStatements(b, logPath, l2, l3)
	perRun := (float64(runs.total) - bgPerSec*logEnd.Sub(s2.at).Seconds()) / alerts
	d := s3.minus(s2, idle)
	b.ReportMetric(perRun, "statements/run")
	b.ReportMetric(d.xacts/alerts, "xact/run")
	b.ReportMetric(d.activeMS/alerts, "db-ms/run")
	b.Logf("%d alerts, one notification each (%d answered 503): %d statements logged, %.0f of them the background; by kind: %v", alerts, res.unavailable, runs.total, bgPerSec*logEnd.Sub(s2.at).Seconds(), runs.kinds)

	// Repeats: each is folded into its alert's run.
	l4, s4 := logSize(b, logPath), pg.snapshot(b)
	res = c.storm(b, hosts, alerts, benchSenders)
	time.Sleep(3 * time.Second)
	l5 := logSize(b, logPath)
	logEnd = time.Now()
	time.Sleep(pgStatsFlush)
	s5 := pg.snapshot(b)
	repeats := countStatements(b, logPath, l4, l5)
	perRepeat := (float64(repeats.total) - bgPerSec*logEnd.Sub(s4.at).Seconds()) / alerts
	d = s5.minus(s4, idle)
	b.ReportMetric(perRepeat, "statements/repeat")
	b.ReportMetric(d.xacts/alerts, "xact/repeat")
	b.ReportMetric(d.activeMS/alerts, "db-ms/repeat")
	b.Logf("%d repeats (%d answered 503): %d statements logged; by kind: %v", alerts, res.unavailable, repeats.total, repeats.kinds)
	c.verifyOneRunEach(b, hosts)
}

func benchHosts(n int) []string {
	hosts := make([]string, n)
	for i := range hosts {
		hosts[i] = fmt.Sprintf("bench-%03d", i)
	}
	return hosts
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func pct(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p+99)/100 - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// stormResult is what the senders saw.
type stormResult struct {
	start       time.Time
	elapsed     time.Duration
	latencies   []time.Duration
	unavailable int64
}

// storm delivers n notifications for the alerts of hosts (notification i
// is for hosts[i%len(hosts)], so the first round is new and the others
// repeat it) from senders concurrent senders, notification i to replica
// i%replicas as a round-robin load balancer would. A 503 is delivered
// again after benchRetry, as Alertmanager retries; any other answer but
// 200 fails the benchmark.
func (c *cluster) storm(tb testing.TB, hosts []string, n, senders int) stormResult {
	tb.Helper()
	var (
		mu          sync.Mutex
		res         stormResult
		unavailable atomic.Int64
		failed      = make(chan error, senders)
		jobs        = make(chan int)
		wg          sync.WaitGroup
	)
	res.start = time.Now()
	for range senders {
		wg.Go(func() {
			for i := range jobs {
				r, svc := c.replicas[i%len(c.replicas)], hosts[i%len(hosts)]
				for {
					t0 := time.Now()
					code := c.alert(r, svc)
					took := time.Since(t0)
					if code == http.StatusServiceUnavailable {
						unavailable.Add(1)
						time.Sleep(benchRetry)
						continue
					}
					if code != http.StatusOK {
						failed <- fmt.Errorf("notification %d for %s to %s: HTTP %d", i, svc, r.name, code)
						return
					}
					mu.Lock()
					res.latencies = append(res.latencies, took)
					mu.Unlock()
					break
				}
			}
		})
	}
	var err error
feed:
	for i := range n {
		select {
		case jobs <- i:
		case err = <-failed:
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	res.elapsed = time.Since(res.start)
	if err == nil && len(failed) > 0 {
		err = <-failed
	}
	require.NoError(tb, err)
	require.Len(tb, res.latencies, n, "every notification acknowledged")
	res.unavailable = unavailable.Load()
	return res
}

// waitRunsFinished waits until the replicas logged n finished runs. It
// reads their logs, not the store, so that waiting adds nothing to the
// database's figures.
func (c *cluster) waitRunsFinished(tb testing.TB, n int, within time.Duration) {
	tb.Helper()
	deadline := time.Now().Add(within)
	for {
		done := 0
		for _, r := range c.replicas {
			done += strings.Count(r.logs.String(), `msg="run finished"`)
		}
		if done >= n {
			return
		}
		require.True(tb, time.Now().Before(deadline), "%d of %d runs finished after %s", done, n, within)
		time.Sleep(50 * time.Millisecond)
	}
}

// verifyOneRunEach checks in the store that every alert has exactly one
// run, finished, which its alert record points to, and returns when the
// last one finished.
func (c *cluster) verifyOneRunEach(tb testing.TB, hosts []string) time.Time {
	tb.Helper()
	all, err := c.st.ListRuns(tb.Context(), store.RunFilter{Runbook: "failover", Limit: 10 * len(hosts)})
	require.NoError(tb, err)
	require.Len(tb, all, len(hosts), "one run per alert, none dropped")
	bySvc := map[string]store.Run{}
	var last time.Time
	for _, r := range all {
		svc := r.Params["svc"]
		_, dup := bySvc[svc]
		require.False(tb, dup, "%s: two runs", svc)
		require.Equal(tb, store.RunFinished, r.Status, "%s: run %s", svc, r.ID)
		bySvc[svc] = r
		if r.FinishedAt.After(last) {
			last = r.FinishedAt
		}
	}
	for _, h := range hosts {
		run, ok := bySvc[h]
		require.True(tb, ok, "%s: no run", h)
		a, err := c.st.GetAlert(tb.Context(), "fp-"+h)
		require.NoError(tb, err)
		require.Equal(tb, run.ID, a.RunID, "%s: the alert leads to its run", h)
	}
	return last
}

// cpuTimes are the CPU seconds of the replicas: their own, and their
// waited-for children's (the runbook's commands).
type cpuTimes struct{ self, children float64 }

func (c *cluster) replicaCPU(tb testing.TB) cpuTimes {
	tb.Helper()
	var t cpuTimes
	for _, r := range c.replicas {
		s := readCPU(tb, r.cmd.Process.Pid)
		t.self += s.self
		t.children += s.children
	}
	return t
}

func (t cpuTimes) minus(o cpuTimes) (self, children float64) {
	return t.self - o.self, t.children - o.children
}

// readCPU reads utime, stime, cutime and cstime from /proc/PID/stat.
func readCPU(tb testing.TB, pid int) cpuTimes {
	tb.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	require.NoError(tb, err)
	// The fields after the command name, which may hold spaces, start
	// at the state (field 3); utime is field 14.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	v := func(field int) float64 {
		n, err := strconv.ParseFloat(f[field-3], 64)
		require.NoError(tb, err)
		return n / clockTicks
	}
	return cpuTimes{self: v(14) + v(15), children: v(16) + v(17)}
}

// memFigures are one process's memory in KiB (and its CPU seconds).
type memFigures struct {
	rss, hwm, private int64
	cpu               float64
}

// readStatus reads VmRSS and VmHWM from /proc/PID/status.
func readStatus(tb testing.TB, pid int) memFigures {
	tb.Helper()
	return memFigures{rss: procKiB(tb, fmt.Sprintf("/proc/%d/status", pid), "VmRSS:"), hwm: procKiB(tb, fmt.Sprintf("/proc/%d/status", pid), "VmHWM:")}
}

// readRollup reads a process's RSS and its private memory (the pages no
// other process maps: for a PostgreSQL backend, what the connection costs
// beyond the shared buffers every backend maps) from smaps_rollup.
func readRollup(pid int) (memFigures, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return memFigures{}, fmt.Errorf("read the memory of %d: %w", pid, err)
	}
	defer func() { _ = f.Close() }() // read only
	var m memFigures
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch k {
		case "Rss":
			m.rss = n
		case "Private_Clean", "Private_Dirty":
			m.private += n
		}
	}
	if err := sc.Err(); err != nil {
		return memFigures{}, fmt.Errorf("read the memory of %d: %w", pid, err)
	}
	return m, nil
}

func procKiB(tb testing.TB, path, key string) int64 {
	tb.Helper()
	b, err := os.ReadFile(path)
	require.NoError(tb, err)
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			require.NoError(tb, err)
			return n
		}
	}
	tb.Fatalf("%s has no %s", path, key)
	return 0
}

// pgProbe is the benchmark's own connection to the database, under its
// own application name and with its statements kept out of the log.
type pgProbe struct {
	db   *sql.DB
	name string
}

func openPGProbe(tb testing.TB, dsn string) *pgProbe {
	tb.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	require.NoError(tb, err)
	cfg.RuntimeParams["application_name"] = "runbot-bench-probe"
	cfg.RuntimeParams["log_statement"] = "none"
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(1)
	tb.Cleanup(func() { _ = db.Close() }) // a reader; nothing to lose
	return &pgProbe{db: db, name: cfg.Database}
}

// pgSnapshot is the database's statistics at one time, and the
// application name of each backend connected to it.
type pgSnapshot struct {
	at       time.Time
	xacts    float64
	activeMS float64
	apps     map[int]string
}

// pgRates are transactions and server milliseconds, per second for the
// idle background or in all for a storm.
type pgRates struct{ xacts, activeMS float64 }

// probeXacts is what one snapshot itself costs: its two queries.
const probeXacts = 2

func (p *pgProbe) snapshot(tb testing.TB) pgSnapshot {
	tb.Helper()
	ctx, cancel := context.WithTimeoutCause(tb.Context(), 30*time.Second, errors.New("reading the database statistics took too long"))
	defer cancel()
	s := pgSnapshot{at: time.Now(), apps: map[int]string{}}
	require.NoError(tb, p.db.QueryRowContext(ctx,
		`SELECT xact_commit + xact_rollback, active_time FROM pg_stat_database WHERE datname = current_database()`).Scan(&s.xacts, &s.activeMS))
	rows, err := p.db.QueryContext(ctx, `SELECT pid, application_name FROM pg_stat_activity WHERE datname = current_database()`)
	require.NoError(tb, err)
	defer func() { _ = rows.Close() }() // read to the end below
	for rows.Next() {
		var (
			pid int
			app string
		)
		require.NoError(tb, rows.Scan(&pid, &app))
		s.apps[pid] = app
	}
	require.NoError(tb, rows.Err())
	return s
}

// minus is what happened between o and s, less the idle background over
// that time and the snapshot's own queries.
func (s pgSnapshot) minus(o pgSnapshot, idle pgRates) pgRates {
	secs := s.at.Sub(o.at).Seconds()
	return pgRates{
		xacts:    s.xacts - o.xacts - probeXacts - idle.xacts*secs,
		activeMS: s.activeMS - o.activeMS - idle.activeMS*secs,
	}
}

// idleRates measures the idle replicas' background, per second.
func (p *pgProbe) idleRates(tb testing.TB) pgRates {
	tb.Helper()
	s0 := p.snapshot(tb)
	time.Sleep(idleWindow)
	// The last beats of the window are flushed by now only if the flush
	// interval has passed since: the window is read one flush later and
	// its length stays the same.
	time.Sleep(pgStatsFlush)
	s1 := p.snapshot(tb)
	r := s1.minus(s0, pgRates{})
	secs := s1.at.Sub(s0.at).Seconds()
	return pgRates{xacts: r.xacts / secs, activeMS: r.activeMS / secs}
}

// memSampler samples, once a second during a storm, the memory and CPU
// of the PostgreSQL backends of the benchmark's database.
type memSampler struct {
	mu  sync.Mutex
	max map[int]memFigures
	// first is each backend's CPU seconds when it was first seen.
	first map[int]float64
	done  chan struct{}
	wg    sync.WaitGroup
	title string
}

// startMemSampler starts sampling the backends of pg's database; with no
// pg (SQLite) it samples nothing.
func startMemSampler(tb testing.TB, pg *pgProbe) *memSampler {
	tb.Helper()
	s := &memSampler{max: map[int]memFigures{}, first: map[int]float64{}, done: make(chan struct{})}
	if pg == nil {
		close(s.done)
		return s
	}
	// A backend's process title is "postgres: USER DATABASE [local] STATE".
	s.title = "postgres: runbot " + pg.name + " "
	s.wg.Go(func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			s.sample()
			select {
			case <-tick.C:
			case <-s.done:
				s.sample()
				return
			}
		}
	})
	return s
}

func (s *memSampler) sample() {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err != nil || !strings.HasPrefix(string(cmd), s.title) {
			continue
		}
		m, err := readRollup(pid)
		if err != nil {
			continue // it ended between the listing and the read
		}
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
			f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
			u, _ := strconv.ParseFloat(f[14-3], 64)
			st, _ := strconv.ParseFloat(f[15-3], 64)
			m.cpu = (u + st) / clockTicks
		}
		s.mu.Lock()
		old, seen := s.max[pid]
		if !seen {
			s.first[pid] = m.cpu
		}
		s.max[pid] = memFigures{rss: max(old.rss, m.rss), private: max(old.private, m.private), cpu: max(old.cpu, m.cpu)}
		s.mu.Unlock()
	}
}

func (s *memSampler) stop() {
	select {
	case <-s.done:
	default:
		close(s.done)
	}
	s.wg.Wait()
}

// backends returns the peak figures of the replicas' backends (those
// under runbot's application name), with their CPU since the first
// sample.
func (s *memSampler) backends(apps map[int]string) []memFigures {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []memFigures
	for pid, m := range s.max {
		if apps[pid] == "runbot" {
			m.cpu -= s.first[pid]
			out = append(out, m)
		}
	}
	return out
}

func logSize(tb testing.TB, path string) int64 {
	tb.Helper()
	fi, err := os.Stat(path)
	require.NoError(tb, err)
	return fi.Size()
}

// statementCount is how many statements the log holds, in all and by
// their first word.
type statementCount struct {
	total int
	kinds map[string]int
}

// countStatements counts the statements PostgreSQL logged between two
// offsets of its log: "statement: SQL" for the simple protocol (BEGIN,
// COMMIT, the pool's "-- ping"), "execute NAME: SQL" for a prepared one.
func countStatements(tb testing.TB, path string, from, to int64) statementCount {
	tb.Helper()
	f, err := os.Open(path)
	require.NoError(tb, err)
	defer func() { _ = f.Close() }() // read only
	_, err = f.Seek(from, 0)
	require.NoError(tb, err)
	sc := bufio.NewScanner(io.LimitReader(f, to-from))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	c := statementCount{kinds: map[string]int{}}
	for sc.Scan() {
		line := sc.Text()
		var sqlText string
		if _, rest, ok := strings.Cut(line, "LOG:  statement: "); ok {
			sqlText = rest
		} else if _, rest, ok := strings.Cut(line, "LOG:  execute "); ok {
			_, sqlText, _ = strings.Cut(rest, ": ")
		} else {
			continue
		}
		c.total++
		kind := "ping"
		if w := strings.Fields(sqlText); !strings.HasPrefix(sqlText, "--") && len(w) > 0 {
			kind = strings.ToLower(w[0])
		}
		c.kinds[kind]++
	}
	require.NoError(tb, sc.Err())
	return c
}
