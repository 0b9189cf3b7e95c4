package outbox

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics count what the outbox delivers and how it waits.
type metrics struct {
	queued    *prometheus.CounterVec
	calls     *prometheus.CounterVec
	delivered *prometheus.CounterVec
	retried   *prometheus.CounterVec
	givenUp   prometheus.Counter
	latency   prometheus.Histogram
}

func newMetrics() *metrics {
	return &metrics{
		queued: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "runbot_chat_outbox_queued_total", Help: "Chat posts and updates recorded in the outbox, by kind.",
		}, []string{"kind"}),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "runbot_chat_outbox_calls_total", Help: "Calls the outbox made to the chat platform, by kind.",
		}, []string{"kind"}),
		delivered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "runbot_chat_outbox_delivered_total", Help: "Chat posts and updates the platform took, by kind.",
		}, []string{"kind"}),
		retried: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "runbot_chat_outbox_retries_total", Help: "Calls the platform did not take and that are tried again, by reason (rate_limited, failed).",
		}, []string{"reason"}),
		givenUp: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "runbot_chat_outbox_given_up_total", Help: "Chat messages given up: refused by the platform for good, or not delivered within a day.",
		}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "runbot_chat_outbox_post_delay_seconds", Help: "Time from recording a chat post to the platform taking it.",
			Buckets: []float64{0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 900},
		}),
	}
}

var backlogDesc = []*prometheus.Desc{
	prometheus.NewDesc("runbot_chat_outbox_due", "Chat messages with content the platform does not have yet (all processes).", nil, nil),
	prometheus.NewDesc("runbot_chat_outbox_oldest_due_seconds", "How long the oldest undelivered chat message has waited.", nil, nil),
}

// Describe implements prometheus.Collector.
func (o *Outbox) Describe(ch chan<- *prometheus.Desc) {
	o.metrics.queued.Describe(ch)
	o.metrics.calls.Describe(ch)
	o.metrics.delivered.Describe(ch)
	o.metrics.retried.Describe(ch)
	o.metrics.givenUp.Describe(ch)
	o.metrics.latency.Describe(ch)
	for _, d := range backlogDesc {
		ch <- d
	}
}

// Collect implements prometheus.Collector; the backlog is read from the
// store at scrape time.
func (o *Outbox) Collect(ch chan<- prometheus.Metric) {
	o.metrics.queued.Collect(ch)
	o.metrics.calls.Collect(ch)
	o.metrics.delivered.Collect(ch)
	o.metrics.retried.Collect(ch)
	o.metrics.givenUp.Collect(ch)
	o.metrics.latency.Collect(ch)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	b, err := o.st.ChatBacklog(ctx)
	if err != nil {
		return
	}
	age := 0.0
	if !b.Oldest.IsZero() {
		age = o.now().Sub(b.Oldest).Seconds()
	}
	ch <- prometheus.MustNewConstMetric(backlogDesc[0], prometheus.GaugeValue, float64(b.Due))
	ch <- prometheus.MustNewConstMetric(backlogDesc[1], prometheus.GaugeValue, age)
}
