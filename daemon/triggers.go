package daemon

import (
	"context"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/runbot/runbot/alerts"
	"github.com/runbot/runbot/chat"
	"github.com/runbot/runbot/config"
	"github.com/runbot/runbot/dispatch"
	"github.com/runbot/runbot/internal/heartbeat"
	"github.com/runbot/runbot/runbooks/bind"
	"github.com/runbot/runbot/schedule"
	"github.com/runbot/runbot/slackchat"
)

// wireTriggers mounts the alert webhook and starts the scheduler. Both
// submit to the dispatcher; their messages go to its chat (Slack) when one
// is configured, and are logged otherwise.
func wireTriggers(ctx context.Context, cfg *config.Config, d *daemonParts, mux *http.ServeMux, reg prometheus.Registerer, ready *heartbeat.Monitor) error {
	disp := d.disp
	if cfg.Alerts != nil {
		a := cfg.Alerts
		ac := alerts.Config{
			BearerToken: a.BearerToken, BasicUser: a.BasicUser, BasicPass: a.BasicPass,
			DedupWindow: a.DedupWindow, MaxQueue: a.MaxQueue, MaxBody: a.MaxBody, Channel: a.Channel,
			Messages: alerts.Messages(a.Messages),
		}
		if g := a.Generic; g != nil {
			ac.Generic = &alerts.GenericMapping{
				Alerts: g.Alerts, Alertname: g.Alertname, Fingerprint: g.Fingerprint, Status: g.Status, ResolvedValues: g.ResolvedValues,
				Labels: g.Labels, LabelsFrom: g.LabelsFrom, Annotations: g.Annotations, AnnotationsFrom: g.AnnotationsFrom, StartsAt: g.StartsAt,
			}
		}
		for _, r := range a.Routes {
			ac.Routes = append(ac.Routes, alerts.Route{Match: r.Match, Runbook: r.Runbook, Params: r.Params})
		}
		rcv, err := alerts.New(ac, disp, alerts.Deps{TriggerDeps: dispatch.TriggerDeps{Store: d.st, Chat: disp.Chat(), Heartbeat: ready, Logger: d.log}})
		if err != nil {
			return err
		}
		d.alerts = rcv
		mux.Handle("/alerts/", rcv.Handler())
		reg.MustRegister(rcv)
		d.loops.Go(func() {
			if err := rcv.Run(ctx); err != nil && ctx.Err() == nil {
				d.log.Error("alert intake stopped", "err", err)
			}
		})
	}
	// The scheduler always runs: runbooks may schedule themselves.
	sc := scheduleConfig(cfg)
	// Every replica schedules every audit; the tick claims in the store
	// make each tick run once across them.
	sched, err := schedule.New(sc, disp, schedule.Deps{TriggerDeps: dispatch.TriggerDeps{Store: d.st, Chat: disp.Chat(), Heartbeat: ready, Logger: d.log},
		Fleet: &bind.Fleet{Inventory: d.inv}, Ticks: d.st})
	if err != nil {
		return err
	}
	reg.MustRegister(sched)
	d.runScheduler(ctx, sched)
	return nil
}

// receiveSlack serves what Slack sends (over HTTP under /slack/, or over
// Socket Mode) to the chat commands.
func (d *daemonParts) receiveSlack(ctx context.Context, sl *slackchat.Slack, h chat.Handler, mux *http.ServeMux) error {
	b, err := slackchat.NewReceiver(sl, h)
	if err != nil {
		return err
	}
	mux.Handle("/slack/", b.Handler())
	d.loops.Go(func() {
		if err := b.Run(ctx); err != nil && ctx.Err() == nil {
			d.log.Error("slack stopped", "err", err)
		}
	})
	return nil
}
