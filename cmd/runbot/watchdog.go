package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"

	"github.com/runbot/runbot/internal/heartbeat"
)

// notifier sends sd_notify messages; daemon.SdNotify in production.
type notifier func(state string) error

func sdNotify(state string) error {
	_, err := daemon.SdNotify(false, state)
	return err
}

// watchdog pings systemd's watchdog every interval, but only while every
// loop makes progress: a wedged bot stops pinging and systemd restarts it.
func watchdog(ctx context.Context, interval time.Duration, mon *heartbeat.Monitor, notify notifier, log *slog.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if stuck := mon.Check(); len(stuck) > 0 {
			log.Warn("withholding the watchdog ping: a loop is stuck", "loop", stuck[0].Loop, "for", stuck[0].Since.Round(time.Second))
			continue
		}
		if err := notify(daemon.SdNotifyWatchdog); err != nil {
			log.Warn("watchdog ping failed", "err", err)
		}
	}
}
