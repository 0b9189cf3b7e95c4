package slackchat

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/slack-go/slack"
)

// slackMetrics count the bot's Slack Web API calls, so that an operator
// sees Slack being slow, refusing the token or rate limiting the bot
// before on-call engineers notice missing messages.
type slackMetrics struct {
	calls   *prometheus.CounterVec
	seconds *prometheus.HistogramVec
}

func newSlackMetrics() *slackMetrics {
	return &slackMetrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "runbot_slack_api_calls_total",
			Help: "Slack Web API calls, by method and outcome (ok, rate_limited, error). A call retried after a 429 counts each attempt.",
		}, []string{"method", "outcome"}),
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "runbot_slack_api_call_duration_seconds",
			Help:    "Duration of one Slack Web API call attempt, by method.",
			Buckets: []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"method"}),
	}
}

func (m *slackMetrics) observe(method string, start time.Time, err error) {
	outcome := "ok"
	var rl *slack.RateLimitedError
	switch {
	case errors.As(err, &rl):
		outcome = "rate_limited"
	case err != nil:
		outcome = "error"
	}
	m.calls.WithLabelValues(method, outcome).Inc()
	m.seconds.WithLabelValues(method).Observe(time.Since(start).Seconds())
}

// Describe implements prometheus.Collector.
func (m *slackMetrics) Describe(ch chan<- *prometheus.Desc) {
	m.calls.Describe(ch)
	m.seconds.Describe(ch)
}

// Collect implements prometheus.Collector.
func (m *slackMetrics) Collect(ch chan<- prometheus.Metric) {
	m.calls.Collect(ch)
	m.seconds.Collect(ch)
}

// slackClient is every Slack Web API call the bot makes.
type slackClient interface {
	slackAPI
	fileUploader
}

// meteredAPI is a slackClient that counts and times every call.
type meteredAPI struct {
	api slackClient
	m   *slackMetrics
}

var _ slackClient = meteredAPI{}

func (a meteredAPI) PostMessageContext(ctx context.Context, channelID string, options ...slack.MsgOption) (string, string, error) {
	start := time.Now()
	ch, ts, err := a.api.PostMessageContext(ctx, channelID, options...)
	a.m.observe("chat.postMessage", start, err)
	return ch, ts, err
}

func (a meteredAPI) UpdateMessageContext(ctx context.Context, channelID, timestamp string, options ...slack.MsgOption) (string, string, string, error) {
	start := time.Now()
	ch, ts, text, err := a.api.UpdateMessageContext(ctx, channelID, timestamp, options...)
	a.m.observe("chat.update", start, err)
	return ch, ts, text, err
}

func (a meteredAPI) PostEphemeralContext(ctx context.Context, channelID, userID string, options ...slack.MsgOption) (string, error) {
	start := time.Now()
	ts, err := a.api.PostEphemeralContext(ctx, channelID, userID, options...)
	a.m.observe("chat.postEphemeral", start, err)
	return ts, err
}

func (a meteredAPI) GetUserGroupMembersContext(ctx context.Context, userGroup string, options ...slack.GetUserGroupMembersOption) ([]string, error) {
	start := time.Now()
	users, err := a.api.GetUserGroupMembersContext(ctx, userGroup, options...)
	a.m.observe("usergroups.users.list", start, err)
	return users, err
}

func (a meteredAPI) UploadFileContext(ctx context.Context, params slack.UploadFileParameters) (*slack.FileSummary, error) {
	start := time.Now()
	f, err := a.api.UploadFileContext(ctx, params)
	a.m.observe("files.upload", start, err)
	return f, err
}
