package daemon

import (
	"context"
	"log/slog"
	"time"

	systemd "github.com/coreos/go-systemd/v22/daemon"

	"github.com/runbot/runbot/internal/heartbeat"
)

// Notifier sends sd_notify messages; systemd.SdNotify in production.
type Notifier func(state string) error

// SdNotify sends state to systemd's notify socket; outside systemd it does
// nothing.
func SdNotify(state string) error {
	_, err := systemd.SdNotify(false, state)
	return err
}

// watchdog pings systemd's watchdog every interval, but only while every
// loop goes round: a wedged bot stops pinging and systemd restarts it. A
// loop whose dependency is down (the store, Slack) still goes round and
// says so on /readyz; restarting the process would not bring the
// dependency back and would drop the runs and messages it holds.
func watchdog(ctx context.Context, interval time.Duration, mon *heartbeat.Monitor, notify Notifier, log *slog.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if stuck := mon.Hung(); len(stuck) > 0 {
			log.Warn("withholding the watchdog ping: a loop is stuck", "loop", stuck[0].Loop, "for", stuck[0].Since.Round(time.Second))
			continue
		}
		if err := notify(systemd.SdNotifyWatchdog); err != nil {
			log.Warn("watchdog ping failed", "err", err)
		}
	}
}
