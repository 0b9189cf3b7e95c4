package daemon

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/runbot/runbot/remote/sshrun"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/store"
)

// metrics are what `runbot serve` exports at /metrics.
type metrics struct {
	runs         *prometheus.CounterVec
	steps        *prometheus.HistogramVec
	remediations *prometheus.CounterVec
	sshDials     *prometheus.CounterVec
	sshDialTime  *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer, st store.Store) *metrics {
	m := &metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "runbot_runs_total", Help: "Runbook runs finished, by runbook, trigger and outcome.",
		}, []string{"runbook", "trigger", "outcome"}),
		steps: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "runbot_step_duration_seconds", Help: "Duration of one step on one target, by runbook, check and status.",
			Buckets: []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120},
		}, []string{"runbook", "check", "status"}),
		remediations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "runbot_remediations_total", Help: "Remediations that ended, by remediation and final plan state.",
		}, []string{"remediation", "state"}),
		sshDials: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "runbot_ssh_dials_total",
			Help: "SSH connection attempts, by inventory host and outcome (ok, host_key, auth, timeout, unreachable, error).",
		}, []string{"host", "outcome"}),
		sshDialTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "runbot_ssh_dial_duration_seconds", Help: "Time to connect and authenticate to a host, by host.",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"host"}),
	}
	pending := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "runbot_approvals_pending", Help: "Remediation plans waiting for approval (not expired).",
	}, func() float64 {
		ctx, cancel := context.WithTimeoutCause(context.Background(), 2*time.Second, context.DeadlineExceeded)
		defer cancel()
		plans, err := st.PendingPlans(ctx)
		if err != nil {
			return -1
		}
		return float64(len(plans))
	})
	reg.MustRegister(m.runs, m.steps, m.remediations, m.sshDials, m.sshDialTime, pending)
	return m
}

// Dialed counts one SSH connection attempt (sshrun.Pool.OnDial).
func (m *metrics) Dialed(e sshrun.DialEvent) {
	m.sshDials.WithLabelValues(e.Host, e.Outcome()).Inc()
	m.sshDialTime.WithLabelValues(e.Host).Observe(e.Took.Seconds())
}

// StepFinished implements engine.Observer.
func (m *metrics) StepFinished(rb string, tr *runbooks.TargetRun) {
	m.steps.WithLabelValues(rb, tr.Check, string(tr.Status)).Observe(tr.Duration.Seconds())
}

// RunFinished implements engine.Observer.
func (m *metrics) RunFinished(rep *runbooks.Report) {
	trigger := string(rep.Trigger)
	if trigger == "" {
		trigger = "unknown"
	}
	m.runs.WithLabelValues(rep.Runbook, trigger, string(rep.Outcome)).Inc()
}

// RemediationFinished implements engine.Observer.
func (m *metrics) RemediationFinished(remediation string, res *remediation.ApplyResult) {
	m.remediations.WithLabelValues(remediation, string(res.State)).Inc()
}
