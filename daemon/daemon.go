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
	log    *slog.Logger
	st     store.Store
	pool   *sshrun.Pool
	inv    *inventory.Inventory // as at start; a reload's is in the dispatcher's set and the scheduler
	disp   *dispatch.Dispatcher
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
	// redactor is the one redaction of everything serve shows; a reload
	// adds the key passphrases a new inventory names.
	redactor *redact.Redactor

	loops sync.WaitGroup
}

// Run serves until ctx ends (SIGTERM, Ctrl-C) or the HTTP server fails,
// then shuts down within the config's grace period. plan is a config that
// preflight.Load checked without errors; notify is SdNotify under systemd.
func Run(ctx context.Context, plan *preflight.Plan, notify Notifier) error {
	cfg, catalog, inv := plan.Config, plan.Catalog, plan.Inventory
	// One redaction for everything serve shows: Slack, the pages, the
	// logs.
	red, err := serveRedactor(cfg, inv)
	if err != nil {
		return fmt.Errorf("config %s: %w", cfg.File, err)
	}
	log := newLogger(cfg.Log, red)
	slog.SetDefault(log)
	d := &daemonParts{log: log, redactor: red}
	// SIGHUP (systemctl reload) reloads the config, the inventory and the
	// runbooks (reload.go). It is caught from the very start, since its
	// default action kills the process; one that arrives while serve
	// starts waits in the channel and is served once everything is wired.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	var storeOpts []store.Option
	if cfg.Alerts != nil {
		storeOpts = append(storeOpts, store.WithDedupWindow(cfg.Alerts.DedupWindow))
	}
	// The location may be a DSN from a secret reference: it is revealed
	// only to open the store, whose errors redact its password.
	loc, err := cfg.StoreLocation()
	if err != nil {
		return err
	}
	st, recovered, err := store.OpenRecovering(ctx, loc.Reveal(), storeOpts...)
	if err != nil {
		return err
	}
	d.st = st
	defer func() {
		if err := st.Close(); err != nil {
			log.Warn("close store", "err", err)
		}
	}()
	// The lease says to every replica sharing the database that this
	// process is alive; it is held before anything is claimed and resigned
	// (after the shutdown) before the store closes.
	stopLease, err := store.HoldLease(ctx, st, log)
	if err != nil {
		return err
	}
	defer stopLease()

	d.inv = inv
	d.pool = sshrun.NewPool()
	d.pool.IdleTimeout = cfg.SSHIdleTimeout
	// Closing SSH connections at shutdown: a peer that already went away is
	// not worth reporting.
	defer func() { _ = d.pool.Close() }()

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := newMetrics(reg, st)
	reloadM := newReloadMetrics(reg, time.Now())
	d.pool.OnDial = m.Dialed
	eng := &engine.Engine{Targets: &bind.InventoryTargets{Inventory: inv, Runners: &bind.PoolRunners{Inventory: inv, Pool: d.pool}}, Observer: m}
	rem := &remediation.Remediator{Engine: eng, Store: st, Catalog: catalog, Groups: cfg.Groups, Observer: m}

	// live and ready watch runbot's own loops and the store, without
	// which nothing is accepted safely; degraded watches Slack, whose
	// outage only delays posts (they wait in the outbox) and so neither
	// fails readiness nor withholds the systemd watchdog: an outage
	// longer than WatchdogSec must not restart runbot and cut its runs.
	live, ready, degraded := heartbeat.New(nil), heartbeat.New(nil), heartbeat.New(nil)
	mux := http.NewServeMux()
	hh := healthHandlers{live: live, ready: ready, degraded: degraded}
	mux.HandleFunc("GET /healthz", hh.healthz)
	mux.HandleFunc("GET /readyz", hh.readyz)
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))

	runCtx, stopLoops := context.WithCancel(context.WithoutCancel(ctx))
	defer stopLoops()
	// The dispatcher is the core every trigger submits to; Slack, when
	// configured, is its chat, and the chat commands come in through it.
	dcfg := dispatch.Config{MaxConcurrentRuns: cfg.Parallel}
	ddeps := dispatch.Deps{Catalog: catalog, Engine: eng, Remediator: rem, Store: st, Logger: log, Timeline: timeline.ForChat}
	var sl *slackchat.Slack
	var site *web.Site
	if cfg.Slack != nil {
		if sl, err = slackchat.New(withReportLinks(slackConfig(cfg, red), &site), log, nil); err != nil {
			return fmt.Errorf("config %s: %w", cfg.File, err)
		}
		dcfg.Channel = cfg.Slack.Channel
		// Everything runbot posts goes through the outbox: recorded
		// first, delivered at Slack's pace, retried until Slack takes
		// it, so that no run waits for Slack and no outage loses a post.
		ob := outbox.New(sl, st, outbox.Config{Platform: "slack"}, log, nil)
		d.outbox = ob
		d.loops.Go(func() { _ = ob.Run(runCtx) })
		reg.MustRegister(ob)
		ddeps.Chat, ddeps.Redactor = ob, sl.Redactor()
		rem.Directory = sl.Approvers()
		reg.MustRegister(sl)
	}
	// The report pages, when configured, before anything posts a link.
	if site, err = newWebSite(cfg, st, red, log); err != nil {
		return fmt.Errorf("config %s: %w", cfg.File, err)
	}
	if site != nil {
		mountWeb(mux, site)
	}
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
	if sl != nil {
		// No Engine: the commands explain runbooks with the dispatcher's
		// current one, which follows a reload.
		cmds, err := commands.New(commandsConfig(cfg), d.disp, commands.Deps{Store: st, Replier: sl, UserGroups: sl, Logger: log})
		d.cmds = cmds
		if err != nil {
			// serve --check's rules report these at their position first;
			// what is left names the file at least.
			return fmt.Errorf("config %s: %w", cfg.File, err)
		}
		if err := d.receiveSlack(runCtx, sl, cmds, mux); err != nil {
			return err
		}
		d.watch(runCtx, slackDependency(sl), degraded)
	}
	if err := wireTriggers(runCtx, cfg, d, mux, reg, ready); err != nil {
		return fmt.Errorf("config %s: %w", cfg.File, err)
	}
	d.housekeeping(runCtx, live)
	d.watch(runCtx, storeDependency(st), ready)
	gauges := newDependencyGauges(ready, "store")
	if sl != nil {
		gauges.and(degraded, "slack")
	}
	reg.MustRegister(gauges)

	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Listen, err)
	}
	d.server = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return runCtx }}
	serveErr := make(chan error, 1)
	go func() {
		var err error
		if cfg.TLS != nil {
			d.server.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
			err = d.server.ServeTLS(ln, cfg.TLS.Cert, cfg.TLS.Key)
		} else {
			err = d.server.Serve(ln)
		}
		serveErr <- err
	}()
	log.Info("runbot serving", "listen", ln.Addr().String(), "runbooks", len(catalog.Names()), "slack", cfg.Slack != nil, "alerts", cfg.Alerts != nil, "schedules", len(cfg.Schedules))

	// READY=1 only once every readiness loop has really succeeded once.
	if err := waitReady(ctx, live, ready); err != nil {
		if ctx.Err() == nil {
			return err
		}
		// Stopped while starting (systemctl stop, Ctrl-C): a clean
		// shutdown like any other, not a failure.
		return d.shutdown(cfg.ShutdownGrace, notify, stopLoops)
	}
	if err := notify("READY=1\nSTATUS=serving on " + ln.Addr().String()); err != nil {
		log.Warn("sd_notify READY failed", "err", err)
	}
	// Reloads start once serve is ready: systemd takes RELOADING=1 only
	// from a service that is running.
	rl := &reloader{d: d, extraRunbooks: plan.ExtraRunbooks, plan: plan, notify: notify, metrics: reloadM, ready: ready,
		status: "serving on " + ln.Addr().String(), now: time.Now}
	d.loops.Go(func() { rl.loop(runCtx, ctx.Done(), hup) })
	if interval, err := systemd.SdWatchdogEnabled(false); err == nil && interval > 0 {
		d.loops.Go(func() { watchdog(runCtx, interval/2, joined(live, ready), notify, log) })
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
