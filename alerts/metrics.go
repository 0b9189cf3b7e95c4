package alerts

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/runbot/runbot/internal/promset"
)

// alertMetrics are the webhook's Prometheus metrics. Receiver implements
// prometheus.Collector with them; register it on the serve command's
// registry.
type alertMetrics struct {
	notifications *prometheus.CounterVec
	rejected      *prometheus.CounterVec
	alerts        *prometheus.CounterVec
	deduped       prometheus.Counter
	unrouted      prometheus.Counter
	invalid       prometheus.Counter
	runs          prometheus.Counter
	ack           *prometheus.HistogramVec
	depth         prometheus.GaugeFunc
	capacity      prometheus.Gauge
	// set is all of them, for Describe and Collect.
	set promset.Set
}

func newAlertMetrics(depth func() float64, capacity int) *alertMetrics {
	m := &alertMetrics{
		notifications: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "runbot", Name: "alert_notifications_received_total",
			Help: "Webhook notifications received, by endpoint (alertmanager, generic).",
		}, []string{"endpoint"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "runbot", Name: "alert_notifications_rejected_total",
			Help: "Webhook notifications answered with an error, by endpoint and reason (unauthorized, too_large, invalid, queue_full, store_error).",
		}, []string{"endpoint", "reason"}),
		alerts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "runbot", Name: "alerts_received_total",
			Help: "Alerts recorded from accepted notifications, by endpoint and status (firing, resolved).",
		}, []string{"endpoint", "status"}),
		deduped: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "runbot", Name: "alerts_deduplicated_total",
			Help: "Firing alerts folded into a run they had already started (repeats and retries).",
		}),
		unrouted: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "runbot", Name: "alerts_unrouted_total",
			Help: "Alerts recorded and acknowledged that no route maps to a runbook.",
		}),
		invalid: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "runbot", Name: "alerts_invalid_params_total",
			Help: "Alerts whose params (from labels) were invalid: recorded and reported, never run.",
		}),
		runs: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "runbot", Name: "alert_runs_queued_total",
			Help: "Runs queued for alerts.",
		}),
		ack: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "runbot", Name: "alert_ack_duration_seconds",
			Help:    "Time from receiving a notification to answering it, by endpoint and HTTP status class.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"endpoint", "code"}),
		depth: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "runbot", Name: "alert_queue_depth",
			Help: "Alert runs accepted and not yet finished (queued or running).",
		}, depth),
		capacity: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "runbot", Name: "alert_queue_capacity",
			Help: "Alert runs that may be queued or running before new alerts get 503.",
		}),
	}
	m.capacity.Set(float64(capacity))
	m.set = promset.Set{m.notifications, m.rejected, m.alerts, m.deduped, m.unrouted, m.invalid, m.runs, m.ack, m.depth, m.capacity}
	return m
}

// Describe implements prometheus.Collector.
func (a *Receiver) Describe(ch chan<- *prometheus.Desc) { a.metrics.set.Describe(ch) }

// Collect implements prometheus.Collector.
func (a *Receiver) Collect(ch chan<- prometheus.Metric) { a.metrics.set.Collect(ch) }
