package dispatch

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/store"
)

// Work queued by a runbot from before the chat seam kept Slack's names;
// after an upgrade it still posts in its thread and can still tell its
// requester, and what this version writes reads back the same.
func TestWorkPayloadReadsWhatEveryVersionWrote(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, raw string
		want      workPayload
	}{
		{"before the chat seam", `{"channel":"C0ALERTS","thread_ts":"1700000000.000001","response_url":"https://hooks.slack.com/commands/T0/1/x","trigger":{"fingerprint":"abc"}}`,
			workPayload{Channel: "C0ALERTS", Thread: "1700000000.000001", ReplyTo: "https://hooks.slack.com/commands/T0/1/x", Trigger: json.RawMessage(`{"fingerprint":"abc"}`)}},
		{"this version", `{"channel":"C0ALERTS","thread":"m1","reply_to":"r1"}`,
			workPayload{Channel: "C0ALERTS", Thread: "m1", ReplyTo: "r1"}},
		{"both: the new names win", `{"thread":"m1","thread_ts":"old","reply_to":"r1","response_url":"old"}`,
			workPayload{Thread: "m1", ReplyTo: "r1"}},
		{"empty", `{}`, workPayload{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got workPayload
			require.NoError(t, json.Unmarshal([]byte(tc.raw), &got))
			require.Equal(t, tc.want, got)
			again, err := json.Marshal(got)
			require.NoError(t, err)
			var round workPayload
			require.NoError(t, json.Unmarshal(again, &round))
			require.Equal(t, got, round)
		})
	}
	channel, thread := WorkThread(store.Work{Payload: []byte(`{"channel":"C0ALERTS","thread_ts":"1700000000.000001"}`)})
	require.Equal(t, "C0ALERTS", channel)
	require.Equal(t, "1700000000.000001", thread, "an old alert's work is found under its thread")
}
