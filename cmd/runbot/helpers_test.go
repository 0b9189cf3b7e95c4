package main

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/syncbuf"
	"github.com/runbot/runbot/store"
)

// syncBuffer collects a child process's output while the test reads it:
// the one concurrency-safe test buffer, under the name these tests use.
type syncBuffer = syncbuf.Buffer

// postedRefs shows runs as Slack sees them: a run's message reference
// holds the chat outbox's id until the message is posted, and Slack's ts
// after. A run whose message Slack does not have yet shows none.
func postedRefs(ctx context.Context, tb testing.TB, st store.Store, runs []store.Run) []store.Run {
	tb.Helper()
	for i, run := range runs {
		if run.Message == nil || !strings.HasPrefix(run.Message.ID, store.ChatMessagePrefix) {
			continue
		}
		m, err := st.GetChatMessage(ctx, run.Message.ID)
		require.NoError(tb, err)
		if !m.Posted() {
			runs[i].Message = nil
			continue
		}
		ref := *run.Message
		ref.ID = m.PlatformID
		runs[i].Message = &ref
	}
	return runs
}
