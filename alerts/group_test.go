package alerts

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/chat/chattest"
	"github.com/runbot/runbot/dispatch"
	"github.com/runbot/runbot/store"
)

// notification is an Alertmanager v4 notification of n firing
// HighErrorRate alerts of one group, each on its own instance.
func notification(t *testing.T, groupKey string, n int) []byte {
	t.Helper()
	type alert struct {
		Status      string            `json:"status"`
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
		StartsAt    string            `json:"startsAt"`
		EndsAt      string            `json:"endsAt"`
		Fingerprint string            `json:"fingerprint"`
	}
	var alerts []alert
	for i := range n {
		alerts = append(alerts, alert{
			Status: "firing", StartsAt: "2026-11-29T07:46:43Z", EndsAt: "0001-01-01T00:00:00Z",
			Labels:      map[string]string{"alertname": "HighErrorRate", "service": "api", "severity": "critical", "instance": fmt.Sprintf("api-%d:8080", i)},
			Annotations: map[string]string{"summary": "API 5xx ratio above 5%"},
			Fingerprint: fmt.Sprintf("%s-%02d", strings.Trim(groupKey, "{}:"), i),
		})
	}
	b, err := json.Marshal(map[string]any{
		"receiver": "runbot", "status": "firing", "alerts": alerts, "version": "4", "groupKey": groupKey,
		"groupLabels": map[string]string{"alertname": "HighErrorRate"}, "externalURL": "http://vm:19093",
	})
	require.NoError(t, err)
	return b
}

func topLevel(posts []chattest.Post) []chattest.Post {
	var out []chattest.Post
	for _, p := range posts {
		if p.Thread == "" {
			out = append(out, p)
		}
	}
	return out
}

// A notification of several alerts is one message: a summary that lists
// each alert's runbook and, as its run ends, its verdict. The runs post
// nothing of their own when nobody must act on them.
func TestGroupIsOneMessageWithEachVerdict(t *testing.T) {
	h := newAlertHarness(t)
	ack := h.accepted(notification(t, "{}:{alertname=\"HighErrorRate\"}", 5))
	require.Equal(t, 5, ack.New)
	h.settle()
	runs := h.runs()
	require.Len(t, runs, 5)
	posts := h.posts()
	top := topLevel(posts)
	require.Len(t, top, 1, "one top-level message for the group")
	require.Len(t, posts, 1, "no run posted a message of its own")
	summary := top[0].Last().Text()
	require.Contains(t, summary, "HighErrorRate: 5 alerts firing")
	require.Contains(t, summary, "alertname=HighErrorRate service=api severity=critical", "the common labels")
	require.Contains(t, summary, "5: 5 diagnosed, 0 queued or running, 0 not run, 0 resolved")
	for _, run := range runs {
		require.Nil(t, run.Message, "quiet run %s", run.ID)
		require.Equal(t, store.OutcomeCritical, run.Outcome)
		line := ""
		for l := range strings.SplitSeq(summary, "\n") {
			if strings.Contains(l, run.ID) {
				line = l
			}
		}
		require.NotEmpty(t, line, "run %s is in the summary", run.ID)
		require.Contains(t, line, "instance=api-")
		require.Contains(t, line, "service-errors · Diagnosis: The service is failing requests.")
	}

	// A later notification of the same group joins its summary.
	ack = h.accepted(notification(t, "{}:{alertname=\"HighErrorRate\"}", 7))
	require.Equal(t, 2, ack.New, "the five known alerts are repeats")
	h.settle()
	require.Len(t, h.runs(), 7)
	posts = h.posts()
	require.Len(t, topLevel(posts), 1, "still one message for the group")
	require.Contains(t, topLevel(posts)[0].Last().Text(), "HighErrorRate: 7 alerts firing")
}

// A group of one alert gets the alert's own message with its run in its
// thread, as before groups; so does every alert when a team asks for
// one message per alert.
func TestOneMessagePerAlertWhenAloneOrConfigured(t *testing.T) {
	h := newAlertHarness(t, func(s *alertSetup) { s.cfg.Messages = MessagesAlert })
	h.accepted(notification(t, "{}:{alertname=\"HighErrorRate\"}", 3))
	h.settle()
	require.Len(t, h.runs(), 3)
	require.Len(t, topLevel(h.posts()), 3, "one message per alert")
	for _, run := range h.runs() {
		require.NotNil(t, run.Message, "each run posts in its alert's thread")
	}

	alone := newAlertHarness(t)
	alone.accepted(notification(t, "{}:{alertname=\"Other\"}", 1))
	alone.settle()
	top := topLevel(alone.posts())
	require.Len(t, top, 1)
	require.Contains(t, top[0].Last().Text(), "HighErrorRate firing")
	require.Len(t, alone.thread(top[0].Ref.ID), 1, "its run in its thread")
}

func TestMessagesConfigIsChecked(t *testing.T) {
	h := newAlertHarness(t)
	_, err := New(Config{BearerToken: writeSecret(t, "b", "x"), Messages: "thread"}, h.disp, Deps{TriggerDeps: dispatch.TriggerDeps{Store: h.store, Chat: h.rec}})
	require.ErrorContains(t, err, `alert messages: "thread" is neither "group" nor "alert"`)
}
