package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/runbot/runbot/internal/heartbeat"
	"github.com/runbot/runbot/slackchat"
	"github.com/runbot/runbot/store"
)

// dependency is something serve cannot work without (the store, Slack),
// probed in the background so that /readyz reports it without ever
// waiting on it: a request reads the last answer, never asks.
type dependency struct {
	name string
	// interval is how often it is probed; a probe not answered within
	// timeout counts as down.
	interval, timeout time.Duration
	probe             func(ctx context.Context) error
}

// Probe intervals: the store is local and cheap to ask (StoreProbeInterval
// is how long readiness may lag a store that stopped taking writes);
// auth.test counts against Slack's rate limits (tier 4, 100+/min), so once
// every 30s.
const (
	StoreProbeInterval = 5 * time.Second
	storeProbeTimeout  = 2 * time.Second
	slackProbeInterval = 30 * time.Second
	slackProbeTimeout  = 10 * time.Second
)

// storeDependency probes the store with a read and a write: a store that
// answers reads but takes no writes (a full disk, a read-only file) cannot
// record an alert, and must not say it is ready.
func storeDependency(st store.Store) dependency {
	return dependency{name: "store", interval: StoreProbeInterval, timeout: storeProbeTimeout, probe: func(ctx context.Context) error {
		if err := st.Ping(ctx); err != nil {
			return err
		}
		return st.PingWrite(ctx)
	}}
}

func slackDependency(sl *slackchat.Slack) dependency {
	return dependency{name: "slack", interval: slackProbeInterval, timeout: slackProbeTimeout, probe: sl.Ping}
}

// probeGap is how long a probe may go without an answer (it hangs past
// its timeout, or the loop is stuck) before the dependency counts as down.
func (dep dependency) probeGap() time.Duration { return 2*dep.interval + dep.timeout }

// watch registers dep with ready and probes it until ctx ends: a failed
// probe makes /readyz fail at once, with the reason.
func (d *daemonParts) watch(ctx context.Context, dep dependency, ready *heartbeat.Monitor) {
	ready.Register(dep.name, dep.probeGap())
	d.loops.Go(func() { probeLoop(ctx, dep, ready, d.log) })
}

// probeLoop probes dep every interval, each probe under its timeout, and
// records the answer in ready. It logs when the dependency goes down and
// when it comes back, not at every probe.
func probeLoop(ctx context.Context, dep dependency, ready *heartbeat.Monitor, log *slog.Logger) {
	tick := time.NewTicker(dep.interval)
	defer tick.Stop()
	up := true
	for {
		cctx, cancel := context.WithTimeoutCause(ctx, dep.timeout, fmt.Errorf("no answer within %s", dep.timeout))
		err := dep.probe(cctx)
		if err != nil && cctx.Err() != nil {
			err = fmt.Errorf("probe %s: %w", dep.name, context.Cause(cctx))
		}
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			ready.Beat(dep.name)
			if !up {
				log.Info("dependency is back", "dependency", dep.name)
			}
			up = true
		} else {
			ready.Fail(dep.name, err)
			if up {
				log.Warn("dependency is down: not ready", "dependency", dep.name, "err", err)
			}
			up = false
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// dependencyGauges export runbot_dependency_up{dependency}: 1 while the
// last probe answered in time, 0 otherwise, read from the same monitor
// as /readyz so the two never disagree.
type dependencyGauges struct {
	ready *heartbeat.Monitor
	names []string
	// more are further monitors and the dependencies they watch (Slack,
	// in the degraded monitor).
	more []*dependencyGauges
	desc *prometheus.Desc
}

func newDependencyGauges(ready *heartbeat.Monitor, names ...string) *dependencyGauges {
	return &dependencyGauges{ready: ready, names: names, desc: prometheus.NewDesc(
		"runbot_dependency_up", "Whether a dependency (store, slack) answered its last readiness probe in time.", []string{"dependency"}, nil)}
}

// and adds the dependencies another monitor watches.
func (g *dependencyGauges) and(m *heartbeat.Monitor, names ...string) *dependencyGauges {
	g.more = append(g.more, &dependencyGauges{ready: m, names: names, desc: g.desc})
	return g
}

func (g *dependencyGauges) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }

func (g *dependencyGauges) Collect(ch chan<- prometheus.Metric) {
	for _, m := range g.more {
		m.Collect(ch)
	}
	down := map[string]bool{}
	for _, s := range g.ready.Check() {
		down[s.Loop] = true
	}
	for _, n := range g.names {
		v := 1.0
		if down[n] {
			v = 0
		}
		ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, v, n)
	}
}
