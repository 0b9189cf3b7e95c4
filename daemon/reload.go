package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/runbot/runbot/alerts"
	"github.com/runbot/runbot/config"
	"github.com/runbot/runbot/dispatch"
	"github.com/runbot/runbot/internal/heartbeat"
	"github.com/runbot/runbot/internal/yamlnode"
	"github.com/runbot/runbot/preflight"
	"github.com/runbot/runbot/runbooks/bind"
	"github.com/runbot/runbot/schedule"
)

// Reloading (SIGHUP, systemctl reload) reads the config, the inventory and
// the runbooks again, checks them as serve --check does, and installs what
// can change in a running daemon — the runbooks, the inventory (and the
// key passphrases it names, added to what is redacted), the schedules,
// the groups, slack.authorize, operators: (whom the report pages let
// vote) and the runbooks' alert triggers — all at once or not at all.
// A run in flight keeps the runbooks and the inventory it started with
// (dispatch.Dispatcher.Swap). What the daemon opened or bound at start
// (the listener, the store, Slack, the web pages, the alert webhook, the
// log) keeps its running value until a restart, and the log says so.

// reloadMetrics say whether the last reload worked, as Prometheus and
// Alertmanager say it of theirs, so that an alert can catch a config that
// was edited, reloaded and refused.
type reloadMetrics struct {
	success     prometheus.Gauge
	lastSuccess prometheus.Gauge
}

func newReloadMetrics(reg prometheus.Registerer, now time.Time) *reloadMetrics {
	m := &reloadMetrics{
		success: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "runbot_config_reload_success",
			Help: "Whether the last config reload (SIGHUP) succeeded: 1, or 0 when it was refused and the running config kept.",
		}),
		lastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "runbot_config_last_reload_success_timestamp_seconds",
			Help: "When the running config was last loaded successfully, at start or by a reload, in seconds since the epoch.",
		}),
	}
	// The config serve started with is the first successful load.
	m.success.Set(1)
	m.lastSuccess.Set(float64(now.Unix()))
	reg.MustRegister(m.success, m.lastSuccess)
	return m
}

// schedulerRun is the scheduler serve runs; a reload stops it and starts
// its successor.
type schedulerRun struct {
	sched *schedule.Scheduler
	stop  context.CancelFunc
	done  chan struct{}
}

// scheduleConfig maps the serve config's schedules onto the scheduler's.
func scheduleConfig(cfg *config.Config) schedule.Config {
	var sc schedule.Config
	for _, s := range cfg.Schedules {
		sc.Schedules = append(sc.Schedules, schedule.Schedule{Runbook: s.Runbook, Cron: s.Cron, TimeZone: s.TimeZone, Params: s.Params, Post: schedule.PostPolicy(s.Post), Channel: s.Channel,
			Deployments: s.Deployments, Parallel: s.Parallel})
	}
	return sc
}

// runScheduler runs sched under a context of its own, a child of ctx, so
// that a reload can stop it alone. Stopping it leaves its audits in flight
// running: they are the dispatcher's work (Dispatcher.Go).
func (d *daemonParts) runScheduler(ctx context.Context, sched *schedule.Scheduler) {
	sctx, stop := context.WithCancel(ctx)
	run := &schedulerRun{sched: sched, stop: stop, done: make(chan struct{})}
	d.loops.Go(func() {
		defer close(run.done)
		if err := sched.Run(sctx); err != nil && sctx.Err() == nil {
			d.log.Error("scheduler stopped", "err", err)
		}
	})
	d.sched = run
}

// reloader carries out reloads, one at a time: its loop is the only
// goroutine that reloads, and a SIGHUP that arrives during a reload is
// served by one more reload after it (the signal channel holds one).
type reloader struct {
	d *daemonParts
	// extraRunbooks are the --runbook-dir directories of the command
	// line, read before the config's as at start.
	extraRunbooks []string
	// plan is what runs now: the config as in effect (what needs a
	// restart kept at its running value), and the catalog and inventory.
	plan    *preflight.Plan
	notify  Notifier
	metrics *reloadMetrics
	// ready is the readiness monitor the scheduler beats.
	ready *heartbeat.Monitor
	// status is the STATUS= systemd shows while serving.
	status string
	now    func() time.Time
}

// loop reloads on every signal on hup until stopping is closed (SIGTERM:
// a daemon that drains its runs takes no new set) or ctx, the context of
// serve's loops that a reload starts the scheduler under, ends.
func (r *reloader) loop(ctx context.Context, stopping <-chan struct{}, hup <-chan os.Signal) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-stopping:
			return
		case <-hup:
			r.reload(ctx)
		}
	}
}

// reload reads and checks everything again and installs it, or keeps the
// running set and says why. systemd hears RELOADING=1 first and READY=1
// when it is over, either way: a refused reload leaves runbot serving.
func (r *reloader) reload(ctx context.Context) {
	log := r.d.log
	path := r.plan.Config.File
	log.Info("SIGHUP received: reloading the config, the inventory and the runbooks", "config", path)
	if err := r.notify("RELOADING=1\nSTATUS=reloading " + path); err != nil {
		log.Warn("sd_notify RELOADING failed", "err", err)
	}
	status := r.status
	if err := r.apply(ctx, log); err != nil {
		r.metrics.success.Set(0)
		log.Error("config reload failed: kept the running config, inventory and runbooks", "config", path, "err", err)
		status += "; the last reload failed, see the log"
	} else {
		r.metrics.success.Set(1)
		r.metrics.lastSuccess.Set(float64(r.now().Unix()))
	}
	if err := r.notify("READY=1\nSTATUS=" + status); err != nil {
		log.Warn("sd_notify READY failed", "err", err)
	}
}

// apply loads the new set and installs it; an error means nothing was
// changed.
func (r *reloader) apply(ctx context.Context, log *slog.Logger) error {
	old := r.plan
	plan, problems, err := preflight.Load(old.Config.File, r.extraRunbooks, preflight.Overrides{})
	if err != nil {
		return fmt.Errorf("read the config and what it names: %w", err)
	}
	logProblems(log, problems)
	if err := problems.Err(); err != nil {
		return fmt.Errorf("%d error(s), each logged above as file:line:col (runbot serve --check --config %s lists them too)", len(problems.Errors()), old.Config.File)
	}
	cfg, restart := reloadable(old.Config, plan.Config)
	if len(restart) > 0 {
		log.Warn("config changes that need a restart were not applied; their running values are kept: systemctl restart runbot applies them",
			"settings", strings.Join(restart, ", "))
		// What is kept may name runbooks or deployments the new set no
		// longer has (an alert route): checked again, as it will run.
		if ps := preflight.References(cfg, plan.Catalog, plan.Inventory); ps.Err() != nil {
			logProblems(log, ps)
			return fmt.Errorf("the settings kept until a restart do not fit the new runbooks and inventory: %w", ps.Err())
		}
	}
	// Everything that can fail is built before anything is installed.
	cur := r.d.disp.Current()
	eng := *cur.Engine
	eng.Targets = &bind.InventoryTargets{Inventory: plan.Inventory, Runners: &bind.PoolRunners{Inventory: plan.Inventory, Pool: r.d.pool}}
	rem := *cur.Remediator
	rem.Engine, rem.Catalog, rem.Groups = &eng, plan.Catalog, cfg.Groups
	set := dispatch.Set{Catalog: plan.Catalog, Engine: &eng, Remediator: &rem}
	next, err := r.d.sched.sched.Successor(scheduleConfig(cfg), schedule.Deps{
		TriggerDeps: dispatch.TriggerDeps{Store: r.d.st, Chat: r.d.disp.Chat(), Heartbeat: r.ready, Logger: log},
		Fleet:       &bind.Fleet{Inventory: plan.Inventory}, Ticks: r.d.st, Catalog: plan.Catalog,
	})
	if err != nil {
		return fmt.Errorf("check the schedules: %w", err)
	}
	// The alert routes: the config's (kept until a restart when changed)
	// and the new runbooks' triggers.alerts.
	var routing *alerts.Routing
	if r.d.alerts != nil {
		if routing, err = r.d.alerts.Routing(plan.Catalog); err != nil {
			return fmt.Errorf("check the alert routes: %w", err)
		}
	}
	if r.d.cmds != nil && cfg.Slack != nil {
		// The first install: it checks the rules, and refusing them here
		// leaves everything as it was.
		if err := r.d.cmds.SetAccess(commandsConfig(cfg)); err != nil {
			return fmt.Errorf("check slack.authorize: %w", err)
		}
	}
	// A host the new inventory adds may name a key passphrase: hidden
	// from now on, before any run can reach that host. A passphrase that
	// goes stays hidden: it was a secret.
	r.d.redactor.Add(preflight.Passphrases(plan.Inventory)...)
	if err := r.d.disp.Swap(set); err != nil {
		return fmt.Errorf("install the runbooks and the inventory: %w", err)
	}
	if routing != nil {
		r.d.alerts.SetRouting(routing)
	}
	r.d.site.SetIdentities(cfg.Operators)
	// The old scheduler stops before its successor starts, so that no
	// tick fires on both; a tick due in between is caught up (the tick
	// claims).
	prev := r.d.sched
	prev.stop()
	select {
	case <-prev.done:
	case <-ctx.Done():
		return nil
	}
	r.d.runScheduler(ctx, next)
	r.plan = &preflight.Plan{Config: cfg, Catalog: plan.Catalog, Inventory: plan.Inventory}
	log.Info("config reloaded", "config", cfg.File, "runbooks", len(plan.Catalog.Names()),
		"hosts", len(plan.Inventory.Hosts), "deployments", len(plan.Inventory.Deployments), "schedules", len(next.Schedules()))
	return nil
}

// logProblems logs each problem as file:line:col, errors as errors.
func logProblems(log *slog.Logger, problems yamlnode.Problems) {
	for _, p := range problems {
		level := slog.LevelError
		if p.Severity == yamlnode.Warning {
			level = slog.LevelWarn
		}
		log.Log(context.Background(), level, "config reload: "+p.String())
	}
}

// reloadable is the config a reload installs: next's runbooks, inventory,
// schedules, groups, operators and slack.authorize, and everything else as running
// has it, since it was opened or bound at start. restart names, as the
// config writes them, the settings whose new value waits for a restart. A
// section that needs a restart is kept whole (slack with its authorize
// rules), never half new.
func reloadable(running, next *config.Config) (cfg *config.Config, restart []string) {
	c := *next
	keep := func(key string, same bool, restore func()) {
		if !same {
			restart = append(restart, key)
			restore()
		}
	}
	keep("listen", running.Listen == next.Listen, func() { c.Listen = running.Listen })
	keep("tls", equalConfig(running.TLS, next.TLS), func() { c.TLS = running.TLS })
	keep("store", running.Store == next.Store && equalConfig(running.StoreDSN, next.StoreDSN), func() { c.Store, c.StoreDSN = running.Store, running.StoreDSN })
	keep("log", running.Log == next.Log, func() { c.Log = running.Log })
	keep("slack_usergroups", equalConfig(running.SlackUsergroups, next.SlackUsergroups), func() { c.SlackUsergroups = running.SlackUsergroups })
	keep("slack", sameSlack(running.Slack, next.Slack), func() { c.Slack = running.Slack })
	keep("alerts", equalConfig(running.Alerts, next.Alerts), func() { c.Alerts = running.Alerts })
	keep("web", equalConfig(running.Web, next.Web), func() { c.Web = running.Web })
	keep("shutdown_grace", running.ShutdownGrace == next.ShutdownGrace, func() { c.ShutdownGrace = running.ShutdownGrace })
	keep("parallel", running.Parallel == next.Parallel, func() { c.Parallel = running.Parallel })
	keep("ssh_idle_timeout", running.SSHIdleTimeout == next.SSHIdleTimeout, func() { c.SSHIdleTimeout = running.SSHIdleTimeout })
	return &c, restart
}

// sameSlack says whether two slack sections differ at most in their
// authorize rules, which a reload installs.
func sameSlack(a, b *config.Slack) bool {
	if a == nil || b == nil {
		return a == b
	}
	x, y := *a, *b
	x.Authorize, y.Authorize = nil, nil
	return equalConfig(x, y)
}

// equalConfig compares two values of the config deeply, ignoring where
// things were written (config.Positions): a line added above a section
// moves it without changing it.
func equalConfig(a, b any) bool {
	return equalValues(reflect.ValueOf(a), reflect.ValueOf(b))
}

var positionsType = reflect.TypeFor[config.Positions]()

func equalValues(a, b reflect.Value) bool {
	if !a.IsValid() || !b.IsValid() {
		return a.IsValid() == b.IsValid()
	}
	if a.Type() != b.Type() {
		return false
	}
	if a.Type() == positionsType {
		return true
	}
	switch a.Kind() {
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return equalValues(a.Elem(), b.Elem())
	case reflect.Struct:
		for i := range a.NumField() {
			if !equalValues(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	case reflect.Slice, reflect.Array:
		if a.Len() != b.Len() {
			return false
		}
		for i := range a.Len() {
			if !equalValues(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Map:
		if a.Len() != b.Len() {
			return false
		}
		for _, k := range a.MapKeys() {
			if !equalValues(a.MapIndex(k), b.MapIndex(k)) {
				return false
			}
		}
		return true
	case reflect.Func, reflect.Chan, reflect.UnsafePointer:
		return a.IsNil() && b.IsNil()
	case reflect.Bool:
		return a.Bool() == b.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return a.Int() == b.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return a.Uint() == b.Uint()
	case reflect.Float32, reflect.Float64:
		return a.Float() == b.Float()
	case reflect.Complex64, reflect.Complex128:
		return a.Complex() == b.Complex()
	case reflect.String:
		return a.String() == b.String()
	}
	return false
}
