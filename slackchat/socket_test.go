package slackchat

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"
	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/runview"
	"github.com/runbot/runbot/slackchat/slackrec"
	"github.com/runbot/runbot/store"
)

// recordingAcker records Socket Mode acknowledgements.
type recordingAcker struct {
	acks []ack
	// atAck, when set, runs at each acknowledgement, to check what was
	// done by the time Slack hears of it.
	atAck func()
}

type ack struct {
	envelope string
	payload  []any
}

func (r *recordingAcker) Ack(req socketmode.Request, payload ...any) error {
	r.acks = append(r.acks, ack{envelope: req.EnvelopeID, payload: payload})
	if r.atAck != nil {
		r.atAck()
	}
	return nil
}

// The Socket Mode handler, fed real socketmode.Event values, acknowledges
// a command with its reply and runs the same handlers as HTTP.
func TestSocketEventHandlersMatchHTTP(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	acks := &recordingAcker{}
	sc := slack.SlashCommand{Command: "/runbot", Text: "stuck here " + h.dir, UserID: requester, ChannelID: opsChan, TriggerID: "sock.1"}
	evt := socketmode.Event{Type: socketmode.EventTypeSlashCommand, Data: sc, Request: &socketmode.Request{Type: "slash_commands", EnvelopeID: "env-1"}}
	require.NoError(t, h.bot.socketEvent(t.Context(), acks, evt))
	require.Len(t, acks.acks, 1)
	require.Equal(t, "env-1", acks.acks[0].envelope)
	require.Len(t, acks.acks[0].payload, 1)
	raw, err := json.Marshal(acks.acks[0].payload[0])
	require.NoError(t, err)
	require.Contains(t, string(raw), `"response_type":"ephemeral"`)
	require.Contains(t, string(raw), "Starting stuck-worker")

	// A redelivery of the same command (Slack retries Socket Mode
	// envelopes too) starts nothing new.
	evt.Request = &socketmode.Request{Type: "slash_commands", EnvelopeID: "env-2", RetryAttempt: 1, RetryReason: "timeout"}
	require.NoError(t, h.bot.socketEvent(t.Context(), acks, evt))
	h.idle()
	runs, err := h.store.ListRuns(t.Context(), store.RunFilter{})
	require.NoError(t, err)
	require.Len(t, runs, 1)

	// A click is acknowledged with no payload once its vote is recorded,
	// and the rest is handled after.
	run := runs[0]
	plan := h.planOf(run.ID)
	var atAck []store.Approval
	acks.atAck = func() {
		atAck, err = h.store.Approvals(t.Context(), plan.ID)
		require.NoError(t, err)
	}
	cb := slack.InteractionCallback{Type: slack.InteractionTypeBlockActions, User: slack.User{ID: approverA}}
	cb.Container.ChannelID = opsChan
	cb.ActionCallback.BlockActions = []*slack.BlockAction{{ActionID: runview.ActionApprove, Value: plan.ID + "|" + plan.Hash, ActionTs: "1700000200.000001"}}
	evt = socketmode.Event{Type: socketmode.EventTypeInteractive, Data: cb, Request: &socketmode.Request{Type: "interactive", EnvelopeID: "env-3"}}
	require.NoError(t, h.bot.socketEvent(t.Context(), acks, evt))
	require.Equal(t, "env-3", acks.acks[2].envelope)
	require.Empty(t, acks.acks[2].payload)
	require.Len(t, atAck, 1, "the vote was in the store when the click was acknowledged")
	acks.atAck = nil
	h.idle()
	approvals, err := h.store.Approvals(t.Context(), plan.ID)
	require.NoError(t, err)
	require.Len(t, approvals, 1)
	require.Equal(t, approverA, approvals[0].User)

	require.ErrorIs(t, h.bot.socketEvent(t.Context(), acks, socketmode.Event{Type: socketmode.EventTypeInvalidAuth}), errInvalidAuth)
}

// Socket Mode for real: slack-go's client opens apps.connections.open and
// the WebSocket of slacktest, which delivers a slash command envelope; the
// acknowledgement with the reply comes back over the socket and the run is
// posted through the Web API.
func TestSocketModeOverSlacktest(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) {
		c.Transport = TransportSocket
		c.AppToken = writeSecret(t, "app-token", "xapp-1-test-app-token")
	})
	h.bot.socketOptions = []socketmode.Option{socketmode.OptionPingInterval(2 * time.Minute)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.bot.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Error("socket mode did not stop")
		}
	})

	payload, err := json.Marshal(map[string]any{
		"command": "/runbot", "text": "stuck here " + h.dir, "user_id": requester, "channel_id": opsChan,
		"trigger_id": "ws.1", "response_url": h.rec.ResponseURL("ws-1"), "team_id": "T0TEAM",
	})
	require.NoError(t, err)
	h.rec.Server().SendToWebsocket(fmt.Sprintf(`{"envelope_id":"env-ws-1","type":"slash_commands","accepts_response_payload":true,"payload":%s}`, payload))

	_, err = h.rec.WaitTimeout(30*time.Second, func(calls []slackrec.Call) bool {
		for _, c := range calls {
			if c.Method == "chat.update" && strings.Contains(c.Text(), "Proposed remediation") {
				return true
			}
		}
		return false
	})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		for _, m := range h.rec.Server().GetSeenInboundMessages() {
			if strings.Contains(m, `"envelope_id":"env-ws-1"`) && strings.Contains(m, "Starting stuck-worker") {
				return true
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond, "the command was acknowledged with its reply over the socket")
	h.idle()
	runs, err := h.store.ListRuns(t.Context(), store.RunFilter{})
	require.NoError(t, err)
	require.Len(t, runs, 1)
	require.Equal(t, store.OutcomeCritical, runs[0].Outcome)
}
