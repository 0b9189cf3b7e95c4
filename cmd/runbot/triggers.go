package main

import (
	"context"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/runbot/runbot/config"
	"github.com/runbot/runbot/internal/heartbeat"
	"github.com/runbot/runbot/runbooks"
)

// wireTriggers mounts the alert webhook and starts the scheduler.
func wireTriggers(ctx context.Context, cfg *config.Config, d *daemonParts, mux *http.ServeMux, reg prometheus.Registerer, ready *heartbeat.Monitor, catalog *runbooks.Catalog) error {
	return nil
}
