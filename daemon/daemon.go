// Package daemon is runbot serve: it wires the store, the SSH pool, the
// engine, the dispatcher, the chat platform, the triggers and the report
// pages from a checked config (package preflight), serves health,
// readiness and metrics, speaks sd_notify and the systemd watchdog,
// reloads on SIGHUP and shuts down in order. Run is all of it, callable
// without the command line.
package daemon

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	systemd "github.com/coreos/go-systemd/v22/daemon"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/runbot/runbot/alerts"
	"github.com/runbot/runbot/chat/outbox"
	"github.com/runbot/runbot/commands"
	"github.com/runbot/runbot/config"
	"github.com/runbot/runbot/dispatch"
	"github.com/runbot/runbot/internal/heartbeat"
	"github.com/runbot/runbot/internal/redact"
	"github.com/runbot/runbot/inventory"
	"github.com/runbot/runbot/preflight"
	"github.com/runbot/runbot/remote/sshrun"
	"github.com/runbot/runbot/runbooks/bind"
	"github.com/runbot/runbot/runbooks/engine"
	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/slackchat"
	"github.com/runbot/runbot/store"
	"github.com/runbot/runbot/timeline"
	"github.com/runbot/runbot/web"
)

// newLogger writes serve's log to stderr (the journal), redacted by red:
// errors and summaries quote command output, and a log is read by more
// people than the store.
func newLogger(c config.Log, red *redact.Redactor) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(c.Level))
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler = slog.NewTextHandler(os.Stderr, opts)
	if c.Format == "json" {
		h = slog.NewJSONHandler(os.Stderr, opts)
	}
	return slog.New(redact.NewHandler(h, red))
}

// daemonParts is everything Run started, for an orderly shutdown.
type daemonParts struct {
	log  *slog.Logger
	st   store.Store
	pool *sshrun.Pool
	inv  *inventory.Inventory // as at start; a reload's is in the dispatcher's set and the scheduler
	disp *dispatch.Dispatcher
	// fence stops the applies in flight before the lease can lapse.
	fence  *leaseFence
	server *http.Server
	// outbox delivers chat messages; nil without Slack.
	outbox *outbox.Outbox
	// cmds are the chat commands, nil without Slack; sched is the
	// running scheduler. A reload replaces their access rules and the
	// scheduler (reload.go).
	cmds *commands.Handler
	// alerts is the alert webhook, nil without one; a reload gives it
	// the new runbooks' routes.
	alerts *alerts.Receiver
	sched  *schedulerRun
	// site is the report pages, nil without them; a reload gives them
	// the new operators: to vote as.
	site *web.Site
	// redactor is the one redaction of everything serve shows; a reload
	// adds the key passphrases a new inventory names.
	redactor *redact.Redactor

	loops sync.WaitGroup
}

// Run serves until ctx ends (SIGTERM, Ctrl-C) or the HTTP server fails,
// then shuts down within the config's grace period. plan is a config that
// preflight.Load checked without errors; notify is SdNotify under systemd;
// opts are test hooks.
func Run(ctx context.Context, plan *preflight.Plan, notify Notifier, opts ...Option) error {
	var o runOptions
	for _, opt := range opts {
		opt(&o)
	}
	cfg := plan.Config
	// One redaction for everything serve shows: Slack, the pages, the
	// logs. A config secret that does not load stops serve here, as it
	// would stop it a moment later anyway.
	values, err := cfg.SecretValues()
	if err != nil {
		return fmt.Errorf("config %s: load the secrets to redact: %w", cfg.File, err)
	}
	red, err := preflight.Redactor(cfg, plan.Inventory, values)
	if err != nil {
		return fmt.Errorf("config %s: %w", cfg.File, err)
	}
	log := newLogger(cfg.Log, red)
	slog.SetDefault(log)
	d := &daemonParts{log: log, redactor: red, inv: plan.Inventory}
	storeOpts := o.storeOptions(log)
	// SIGHUP (systemctl reload) reloads the config, the inventory and the
	// runbooks (reload.go). It is caught from the very start, since its
	// default action kills the process; one that arrives while serve
	// starts waits in the channel and is served once everything is wired.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	// The address first: a serve that cannot listen (a second copy, a
	// busy port) must stop before it recovers the store, resumes queued
	// work or starts a trigger, and with that one error only.
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Listen, err)
	}
	// Serving closes it too; a second close only returns an error.
	defer func() { _ = ln.Close() }()
	recovered, closeStore, err := d.openStore(ctx, cfg, storeOpts)
	if err != nil {
		return err
	}
	defer closeStore()
	d.pool = sshrun.NewPool()
	d.pool.IdleTimeout = cfg.SSHIdleTimeout
	// Closing SSH connections at shutdown: a peer that already went away is
	// not worth reporting.
	defer func() { _ = d.pool.Close() }()

	runCtx, stopLoops := context.WithCancel(context.WithoutCancel(ctx))
	defer stopLoops()
	w, err := d.wire(runCtx, plan, recovered)
	if err != nil {
		return err
	}
	addr, serveErr := d.serve(runCtx, ln, cfg, w.mux)
	log.Info("runbot serving", "listen", addr, "runbooks", len(plan.Catalog.Names()), "slack", cfg.Slack != nil, "alerts", cfg.Alerts != nil, "schedules", len(cfg.Schedules))

	// READY=1 only once every readiness loop has really succeeded once.
	if err := waitReady(ctx, w.live, w.ready); err != nil {
		if ctx.Err() == nil {
			return err
		}
		// Stopped while starting (systemctl stop, Ctrl-C): a clean
		// shutdown like any other, not a failure.
		return d.shutdown(cfg.ShutdownGrace, notify, stopLoops)
	}
	if err := notify("READY=1\nSTATUS=serving on " + addr); err != nil {
		log.Warn("sd_notify READY failed", "err", err)
	}
	// Reloads start once serve is ready: systemd takes RELOADING=1 only
	// from a service that is running.
	rl := &reloader{d: d, extraRunbooks: plan.ExtraRunbooks, plan: plan, notify: notify, metrics: w.reloads, ready: w.ready,
		status: "serving on " + addr, now: time.Now}
	d.loops.Go(func() { rl.loop(runCtx, ctx.Done(), hup) })
	if interval, err := systemd.SdWatchdogEnabled(false); err == nil && interval > 0 {
		d.loops.Go(func() { watchdog(runCtx, interval/2, joined(w.live, w.ready), notify, log) })
	}

	select {
	case <-ctx.Done():
	case err := <-serveErr:
		if !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("http server: %w", err)
		}
	}
	return d.shutdown(cfg.ShutdownGrace, notify, stopLoops)
}

// openStore opens the store the config names, recovers what a dead process
// left, and holds this process's replica lease. closeStore resigns the
// lease (after the shutdown) and then closes the store. storeOpts come
// from Run's options (test hooks).
func (d *daemonParts) openStore(ctx context.Context, cfg *config.Config, storeOpts []store.Option) (_ store.Recovery, closeStore func(), _ error) {
	if cfg.Alerts != nil {
		storeOpts = append(storeOpts, store.WithDedupWindow(cfg.Alerts.DedupWindow))
	}
	// The location may be a DSN from a secret reference: it is revealed
	// only to open the store, whose errors redact its password.
	loc, err := cfg.StoreLocation()
	if err != nil {
		return store.Recovery{}, nil, err
	}
	st, recovered, err := store.OpenRecovering(ctx, loc.Reveal(), storeOpts...)
	if err != nil {
		return store.Recovery{}, nil, err
	}
	closeSt := func() {
		if err := st.Close(); err != nil {
			d.log.Warn("close store", "err", err)
		}
	}
	// The lease says to every replica sharing the database that this
	// process is alive; it is held before anything is claimed and resigned
	// (after the shutdown) before the store closes.
	// Only a database that replicas on other hosts share can hand this
	// process's work to another one while it is cut off: a SQLite file's
	// other users are on this host and see by its PID that it lives, so
	// a full disk does not stop its runs.
	d.fence = &leaseFence{now: time.Now}
	var renewed func(time.Time)
	if parsed, perr := store.ParseLocation(loc.Reveal()); perr == nil && parsed.Backend == store.BackendPostgres {
		renewed = d.fence.renewed
	}
	stopLease, err := store.HoldLease(ctx, st, d.log, renewed)
	if err != nil {
		closeSt()
		return store.Recovery{}, nil, err
	}
	d.st = st
	return recovered, func() { stopLease(); closeSt() }, nil
}

// wired is what Run serves and watches once the parts are wired.
type wired struct {
	mux     *http.ServeMux
	reloads *reloadMetrics
	// live and ready watch runbot's own loops and the store, without
	// which nothing is accepted safely.
	live, ready *heartbeat.Monitor
}

// wire builds the core and every part around it from the plan: metrics,
// the engine and the remediator, health and metrics endpoints, the chat
// platform behind its outbox, the report pages, the dispatcher (resumed
// with what recovery requeued), the chat commands, the triggers and the
// loops that keep the daemon honest. Loops run under runCtx.
func (d *daemonParts) wire(runCtx context.Context, plan *preflight.Plan, recovered store.Recovery) (*wired, error) {
	cfg, catalog, inv := plan.Config, plan.Catalog, plan.Inventory
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := newMetrics(reg, d.st)
	w := &wired{mux: http.NewServeMux(), reloads: newReloadMetrics(reg, time.Now()), live: heartbeat.New(nil), ready: heartbeat.New(nil)}
	d.pool.OnDial = m.Dialed
	eng := &engine.Engine{Targets: &bind.InventoryTargets{Inventory: inv, Runners: &bind.PoolRunners{Inventory: inv, Pool: d.pool}}, Observer: m}
	rem := &remediation.Remediator{Engine: eng, Store: d.st, Catalog: catalog, Groups: cfg.Groups, Observer: m}

	// degraded watches Slack, whose outage only delays posts (they wait
	// in the outbox) and so neither fails readiness nor withholds the
	// systemd watchdog: an outage longer than WatchdogSec must not
	// restart runbot and cut its runs.
	degraded := heartbeat.New(nil)
	hh := healthHandlers{live: w.live, ready: w.ready, degraded: degraded}
	w.mux.HandleFunc("GET /healthz", hh.healthz)
	w.mux.HandleFunc("GET /readyz", hh.readyz)
	w.mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))

	// The dispatcher is the core every trigger submits to; Slack, when
	// configured, is its chat, and the chat commands come in through it.
	dcfg := dispatch.Config{MaxConcurrentRuns: cfg.Parallel}
	ddeps := dispatch.Deps{Catalog: catalog, Engine: eng, Remediator: rem, Store: d.st, Logger: d.log, Timeline: timeline.ForChat}
	var site *web.Site
	sl, err := d.chatPlatform(runCtx, cfg, reg, &site)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", cfg.File, err)
	}
	if sl != nil {
		dcfg.Channel = cfg.Slack.Channel
		ddeps.Chat, ddeps.Redactor = d.outbox, sl.Redactor()
		rem.Directory = sl.Approvers()
	}
	// The report pages, when configured, before anything posts a link.
	if site, err = newWebSite(cfg, d.st, d.redactor, d.log, d.castFromWeb); err != nil {
		return nil, fmt.Errorf("config %s: %w", cfg.File, err)
	}
	if site != nil {
		d.site = site
		mountWeb(w.mux, site)
	}
	if err := d.startDispatcher(runCtx, dcfg, ddeps, recovered); err != nil {
		return nil, err
	}
	if sl != nil {
		if err := d.chatCommands(runCtx, cfg, sl, w.mux); err != nil {
			return nil, err
		}
		d.watch(runCtx, slackDependency(sl), degraded)
	}
	if err := wireTriggers(runCtx, cfg, d, w.mux, reg, w.ready); err != nil {
		return nil, fmt.Errorf("config %s: %w", cfg.File, err)
	}
	d.housekeeping(runCtx, w.live)
	d.watch(runCtx, storeDependency(d.st), w.ready)
	gauges := newDependencyGauges(w.ready, "store")
	if sl != nil {
		gauges.and(degraded, "slack")
	}
	reg.MustRegister(gauges)
	return w, nil
}

// chatPlatform connects Slack when the config has a slack: block (nil
// otherwise) and starts the outbox everything runbot posts goes through:
// recorded first, delivered at Slack's pace, retried until Slack takes it,
// so that no run waits for Slack and no outage loses a post. site is where
// the report pages will be, for the links Slack's messages carry.
func (d *daemonParts) chatPlatform(runCtx context.Context, cfg *config.Config, reg prometheus.Registerer, site **web.Site) (*slackchat.Slack, error) {
	if cfg.Slack == nil {
		return nil, nil
	}
	sl, err := slackchat.New(withReportLinks(slackConfig(cfg, d.redactor), site), d.log, nil)
	if err != nil {
		return nil, err
	}
	ob := outbox.New(sl, d.st, outbox.Config{Platform: "slack"}, d.log, nil)
	d.outbox = ob
	d.loops.Go(func() { _ = ob.Run(runCtx) })
	reg.MustRegister(ob)
	reg.MustRegister(sl)
	return sl, nil
}

// startDispatcher builds the dispatcher, brings the messages of recovered
// runs up to date, resumes queued work and starts the recovery sweeps.
func (d *daemonParts) startDispatcher(runCtx context.Context, dcfg dispatch.Config, ddeps dispatch.Deps, recovered store.Recovery) error {
	var err error
	if d.disp, err = dispatch.New(dcfg, ddeps); err != nil {
		return err
	}
	// Before the workers start: the messages of recovered runs say which
	// attempt their requeued work runs as next.
	d.disp.ShowRecovered(runCtx, recovered)
	if err := d.disp.Resume(runCtx); err != nil {
		return fmt.Errorf("resume queued work: %w", err)
	}
	// Startup recovered what was dead then; replicas that die later are
	// recovered by the sweeps of those that live, once their lease
	// expired.
	d.loops.Go(func() { d.disp.SweepEvery(runCtx, store.DefaultRecoveryInterval, nil) })
	// From now on a lease about to lapse stops the applies in flight.
	d.fence.fence = d.disp.Fence
	d.loops.Go(func() { d.fence.watch(runCtx) })
	return nil
}

// chatCommands takes Slack's slash commands and button clicks.
func (d *daemonParts) chatCommands(runCtx context.Context, cfg *config.Config, sl *slackchat.Slack, mux *http.ServeMux) error {
	// No Engine: the commands explain runbooks with the dispatcher's
	// current one, which follows a reload.
	cmds, err := commands.New(commandsConfig(cfg), d.disp, commands.Deps{TriggerDeps: dispatch.TriggerDeps{Store: d.st, Logger: d.log}, Replier: sl, UserGroups: sl})
	d.cmds = cmds
	if err != nil {
		// serve --check's rules report these at their position first;
		// what is left names the file at least.
		return fmt.Errorf("config %s: %w", cfg.File, err)
	}
	return d.receiveSlack(runCtx, sl, cmds, mux)
}

// serve serves mux on ln, the config's address, (TLS when configured)
// until shutdown; serveErr says why serving stopped.
func (d *daemonParts) serve(runCtx context.Context, ln net.Listener, cfg *config.Config, mux *http.ServeMux) (addr string, serveErr <-chan error) {
	d.server = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return runCtx }}
	errs := make(chan error, 1)
	go func() {
		var err error
		if cfg.TLS != nil {
			d.server.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
			err = d.server.ServeTLS(ln, cfg.TLS.Cert, cfg.TLS.Key)
		} else {
			err = d.server.Serve(ln)
		}
		errs <- err
	}()
	return ln.Addr().String(), errs
}

// shutdown stops accepting, lets work in flight finish up to grace, and
// persists state. Pending approvals live in the store and survive.
func (d *daemonParts) shutdown(grace time.Duration, notify Notifier, stopLoops context.CancelFunc) error {
	d.log.Info("shutting down", "grace", grace)
	_ = notify("STOPPING=1")
	ctx, cancel := context.WithTimeoutCause(context.Background(), grace, errors.New("shutdown grace period over"))
	defer cancel()
	_ = d.server.Shutdown(ctx)
	if d.disp != nil {
		if err := d.disp.Shutdown(ctx); err != nil {
			d.log.Warn("work still in flight at the end of the grace period was cancelled", "err", err)
		}
	}
	if d.outbox != nil {
		// What is left of the grace period delivers the last messages.
		if err := d.outbox.Drain(ctx); err != nil {
			d.log.Warn("chat messages wait in the store for the next start", "err", err)
		}
	}
	stopLoops()
	d.loops.Wait()
	return nil
}

// waitReady waits until no loop is stuck and every readiness loop beat.
func waitReady(ctx context.Context, monitors ...*heartbeat.Monitor) error {
	for {
		ok := true
		for _, m := range monitors {
			if !m.AllBeat() || len(m.Check()) > 0 {
				ok = false
			}
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// joined is a monitor view over several monitors, for the watchdog.
func joined(ms ...*heartbeat.Monitor) *heartbeat.Monitor {
	return heartbeat.Join(ms...)
}

// housekeeping expires approvals whose window closed and has their Slack
// messages updated; it is the liveness loop: if it stops, the process is
// wedged.
func (d *daemonParts) housekeeping(ctx context.Context, live *heartbeat.Monitor) {
	live.Register("housekeeping", 90*time.Second)
	d.loops.Go(func() {
		tick := time.NewTicker(15 * time.Second)
		defer tick.Stop()
		for {
			cctx, cancel := context.WithTimeoutCause(ctx, 10*time.Second, errors.New("expiring plans took too long"))
			expired, err := d.st.ExpirePlans(cctx)
			cancel()
			if err == nil {
				live.Beat("housekeeping")
				for _, p := range expired {
					d.log.Info("approval window closed", "plan", p.ID, "remediation", p.Remediation)
				}
				if len(expired) > 0 {
					d.disp.ShowExpired(expired)
				}
			} else if ctx.Err() == nil {
				// Gone round, not wedged: the watchdog leaves a process
				// whose store is down alone (heartbeat.Monitor.Hung).
				live.Tried("housekeeping")
				d.log.Warn("housekeeping failed", "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	})
}

// slackConfig maps the serve config onto the Slack platform's.
func slackConfig(cfg *config.Config, red *redact.Redactor) slackchat.Config {
	s := cfg.Slack
	return slackchat.Config{
		Transport: slackchat.Transport(s.Mode), SlackUsergroups: cfg.SlackUsergroups,
		BotToken: s.BotToken, SigningSecret: s.SigningSecret, AppToken: s.AppToken, Redact: s.Redact, APIURL: s.APIURL,
		Redactor: red,
	}
}

// commandsConfig maps the serve config onto the chat commands': the
// command's name and who may run what (slack.authorize). A group that
// looks like a Slack user group id (S…, upper case) is one.
func commandsConfig(cfg *config.Config) commands.Config {
	s := cfg.Slack
	cc := commands.Config{Command: s.Command, Groups: cfg.Groups}
	for _, r := range s.Authorize {
		rule := commands.AccessRule{Runbooks: r.Runbooks, Users: r.Users, Channels: r.Channels}
		for _, g := range r.Groups {
			if strings.HasPrefix(g, "S") && strings.ToUpper(g) == g {
				rule.UserGroups = append(rule.UserGroups, g)
			} else {
				rule.Groups = append(rule.Groups, g)
			}
		}
		cc.Access = append(cc.Access, rule)
	}
	return cc
}
