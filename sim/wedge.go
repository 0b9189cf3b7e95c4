package sim

import (
	"context"
	"fmt"
	"math"
	"os"
	"strconv"
	"syscall"
	"time"
)

// wedgeModel is the causal model of the incident's wedge. With the overlap
// ("zero-overhead") schedule on, the decode loop keeps the next batch's result in
// flight while it processes the previous one; a burst of in-flight KV transfers
// aborted at once leaves that loop waiting on a result that will never be produced,
// so it stops issuing batches and stops polling transfers. The control plane
// (aborts, health, metrics) keeps working. Without the overlap schedule the loop is
// strictly sequential and the same burst is harmless. Only a restart clears a wedge.
type wedgeModel struct {
	overlap bool
	burst   int
	window  time.Duration
	recent  []time.Time
	wedged  bool
	since   time.Time
}

func newWedgeModel(overlap bool, burst int, window time.Duration) wedgeModel {
	return wedgeModel{overlap: overlap, burst: burst, window: window}
}

// observeAbort records one aborted in-flight transfer and reports whether this
// abort is the one that wedged the scheduler.
func (m *wedgeModel) observeAbort(now time.Time) bool {
	if m.wedged || !m.overlap {
		return false
	}
	keep := m.recent[:0]
	for _, t := range m.recent {
		if now.Sub(t) <= m.window {
			keep = append(keep, t)
		}
	}
	m.recent = append(keep, now)
	if len(m.recent) >= m.burst {
		m.wedged, m.since = true, now
		m.recent = nil
		return true
	}
	return false
}

// hangState is the blocked-loop hang (the decode-hang fault): the upstream class of
// overlap-schedule hangs (sgl-project/sglang PRs #28039 and #31072) in which the
// decode scheduler's event loop itself blocks, e.g. every scheduler CPU waiting in
// copy_done.synchronize(). That one loop receives requests, processes aborts,
// pre-allocates KV and hand-shakes with prefill, polls transfers, runs batches and
// serves the health request, so all of them stop at once. Unlike the wedge, nothing
// is logged (not even aborts) and /health fails; the watchdog kills the process if
// the loop blocked with a batch in flight. Only a restart clears it.
type hangState struct {
	since time.Time
	// overlap records whether the overlap schedule was on: the fault blocks the
	// loop either way, the record is for whoever checks the ground truth.
	overlap bool
	// batchInFlight is SGLang's cur_batch != None at the moment the loop blocked:
	// the watchdog can only fire when it is set.
	batchInFlight bool
	forwardCt     int
}

// WatchdogSetting is --watchdog-timeout as SGLang holds it. ServerArgs' default is
// the int 300; a value given on the command line goes through argparse's
// type=float, so the watchdog's own line shows 300.0.
type WatchdogSetting struct {
	Seconds float64
	Given   bool
}

// Duration is the timeout as a Go duration.
func (w WatchdogSetting) Duration() time.Duration {
	return time.Duration(w.Seconds * float64(time.Second))
}

// Repr renders the value the way Python prints it in "self.watchdog_timeout=…".
func (w WatchdogSetting) Repr() string {
	if !w.Given {
		return strconv.FormatFloat(w.Seconds, 'f', -1, 64)
	}
	return pyFloatRepr(w.Seconds)
}

func setWatchdog(p *WatchdogSetting) flagSpec {
	return flagSpec{set: func(v []string) error {
		f, err := strconv.ParseFloat(v[0], 64)
		if err != nil || f <= 0 || math.IsInf(f, 0) || math.IsNaN(f) {
			return fmt.Errorf("not a positive number of seconds: %q", v[0])
		}
		*p = WatchdogSetting{Seconds: f, Given: true}
		return nil
	}}
}

// watchdog is SGLang's scheduler watchdog (Scheduler.watchdog_thread in 2025
// builds, WatchdogRaw from create_scheduler_watchdog in 2026 builds): a thread
// that samples the scheduler's forward counter every timeout/2 and, when a batch
// is in flight (cur_batch is not None) and the counter has not moved for longer
// than the timeout, logs "Watchdog timeout" on every scheduler rank, waits 5 s so
// the parent can print, and SIGQUITs the parent, whose handler logs "Received
// sigquit from a child process…" and SIGKILLs the whole process tree, itself
// included. An idle scheduler (cur_batch None) never trips it, however stuck.
type watchdog struct {
	e        *Engine
	timeout  time.Duration
	interval time.Duration
	// grace is the 5 s the scheduler sleeps before signalling its parent.
	grace time.Duration
	// probe reads the forward counter and whether a batch is in flight.
	probe func() (forwardCt int, active bool)
	// onFire lets the scheduler record the ground truth.
	onFire func()
	// kill ends the process the way kill_process_tree(os.getpid()) does.
	kill func()
}

func newWatchdog(e *Engine, probe func() (int, bool), onFire func()) *watchdog {
	timeout := e.cfg.Watchdog.Duration()
	interval := timeout / 2
	if e.log.Era() <= EraLate2025 {
		// scheduler.py slept watchdog_timeout // 2: whole seconds, rounded down (a
		// 1 s timeout made it spin).
		interval = time.Duration(math.Floor(e.cfg.Watchdog.Seconds/2)) * time.Second
	}
	return &watchdog{
		e: e, timeout: timeout, interval: max(interval, 10*time.Millisecond), grace: 5 * time.Second,
		probe: probe, onFire: onFire,
		kill: func() { _ = syscall.Kill(os.Getpid(), syscall.SIGKILL) },
	}
}

// run watches until ctx ends or the watchdog fires.
func (w *watchdog) run(ctx context.Context) {
	lastCt, lastTime := 0, time.Now()
	tick := time.NewTicker(w.interval)
	defer tick.Stop()
	for {
		now := time.Now()
		if ct, active := w.probe(); active {
			if ct != lastCt {
				lastCt, lastTime = ct, now
			} else if now.Sub(lastTime) > w.timeout {
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
	if w.onFire != nil {
		w.onFire()
	}
	w.e.diag.Warn("watchdog: no forward progress with a batch in flight; killing the process",
		"watchdog_timeout", w.e.cfg.Watchdog.Repr())
	w.logTimeout()
	select {
	case <-ctx.Done():
		return
	case <-time.After(w.grace):
	}
	w.e.log.Logf("", "Received sigquit from a child process. It usually means the child failed.")
	w.kill()
}

// logTimeout prints what each scheduler rank's watchdog prints: the py-spy attempt
// (py-spy is rarely installed in serving images) and the timeout line, each rank's
// process followed by the empty lines its print() calls write.
func (w *watchdog) logTimeout() {
	t, l := w.e.cfg.Topology, w.e.log
	pid := os.Getpid()
	msg := fmt.Sprintf("Scheduler watchdog timeout (self.watchdog_timeout=%s, self.soft=False)", w.e.cfg.Watchdog.Repr())
	if l.Era() <= EraLate2025 {
		msg = fmt.Sprintf("Watchdog timeout (self.watchdog_timeout=%s)", w.e.cfg.Watchdog.Repr())
	}
	for tp := 0; tp < t.TPSize; tp++ {
		dp := 0
		if t.DPAttention && t.DPSize > 1 {
			dp = tp / t.attnTP()
		}
		prefix := t.Prefix(dp, tp)
		// e.stderr ends in a newline, hence the empty line after it.
		l.Logf(prefix, "Pyspy failed to dump PID %d. Error: /bin/sh: 1: py-spy: not found\n", pid+1+tp)
		l.Logf(prefix, "%s", msg)
		l.Raw("")
		l.Raw("")
	}
}
