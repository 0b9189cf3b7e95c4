package schedule

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/runbot/runbot/internal/promset"
	"github.com/runbot/runbot/store"
)

// scheduleMetrics are the scheduler's Prometheus metrics.
type scheduleMetrics struct {
	runs    *prometheus.CounterVec
	posted  *prometheus.CounterVec
	skipped *prometheus.CounterVec
	panics  *prometheus.CounterVec
}

func newScheduleMetrics() *scheduleMetrics {
	return &scheduleMetrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "runbot", Name: "schedule_runs_total",
			Help: "Scheduled audit runs, by schedule and outcome (ok, critical, inconclusive, error).",
		}, []string{"schedule", "outcome"}),
		posted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "runbot", Name: "schedule_posts_total",
			Help: "Scheduled audit results posted to Slack, by schedule.",
		}, []string{"schedule"}),
		skipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "runbot", Name: "schedule_skipped_total",
			Help: "Schedule ticks skipped because the schedule's previous run was still going.",
		}, []string{"schedule"}),
		panics: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "runbot", Name: "schedule_panics_total",
			Help: "Scheduled audit runs that panicked (the scheduler went on).",
		}, []string{"schedule"}),
	}
}

func (m *scheduleMetrics) record(name string, res auditResult) {
	if res.Fleet != nil {
		// A fleet audit counts one run per deployment.
		for _, r := range res.Fleet {
			m.runs.WithLabelValues(name, string(r.Outcome)).Inc()
		}
		if res.Posted {
			m.posted.WithLabelValues(name).Inc()
		}
		return
	}
	o := string(res.Outcome)
	if res.Err != nil && o == "" {
		o = string(store.OutcomeError)
	}
	m.runs.WithLabelValues(name, o).Inc()
	if res.Posted {
		m.posted.WithLabelValues(name).Inc()
	}
}

func (m *scheduleMetrics) collectors() promset.Set {
	return promset.Set{m.runs, m.posted, m.skipped, m.panics}
}

// Describe implements prometheus.Collector.
func (s *Scheduler) Describe(ch chan<- *prometheus.Desc) { s.metrics.collectors().Describe(ch) }

// Collect implements prometheus.Collector.
func (s *Scheduler) Collect(ch chan<- prometheus.Metric) { s.metrics.collectors().Collect(ch) }
