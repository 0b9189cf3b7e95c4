package storetest

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/store"
)

// outboxTests hold the store to the chat outbox: messages kept until the
// platform has their newest content, delivered in order, each claimed by
// one sender at a time across replicas.
var outboxTests = []test{
	{"DeliveredInOrder", testOutboxDeliveredInOrder},
	{"KeyIsOneMessage", testOutboxKeyIsOneMessage},
	{"NewerContentStaysDue", testOutboxNewerContentStaysDue},
	{"ClaimedOnceAcrossReplicas", testOutboxClaimedOnce},
	{"ClaimOfADeadSenderRunsOut", testOutboxClaimRunsOut},
	{"DeferredAndGivenUp", testOutboxDeferred},
	{"RefusesBadMessages", testOutboxRefuses},
	{"ClaimsOfTheDeadReleased", testOutboxClaimsOfTheDeadReleased},
}

func content(t *testing.T, text string) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(map[string]string{"title": text})
	require.NoError(t, err)
	return b
}

// queueMessage queues a top-level message (replies are queued where a
// test needs one, with their parent).
func queueMessage(t *testing.T, s store.Store, channel, text string) store.ChatMessage {
	t.Helper()
	m, created, err := s.QueueChatMessage(t.Context(), store.ChatMessage{Channel: channel, Content: content(t, text)})
	require.NoError(t, err)
	require.True(t, created)
	return m
}

func testOutboxDeliveredInOrder(t *testing.T, e *Env) {
	ctx := t.Context()
	var ids []string
	for i := range 3 {
		m := queueMessage(t, e.S, "C1", fmt.Sprintf("message %d", i))
		require.Equal(t, store.ChatMessageDue, m.State)
		require.Equal(t, 1, m.Version)
		require.Zero(t, m.SentVersion)
		require.False(t, m.Posted())
		require.Regexp(t, "^"+store.ChatMessagePrefix, m.ID)
		ids = append(ids, m.ID)
		e.Clock.Advance(time.Millisecond)
	}
	b, err := e.S.ChatBacklog(ctx)
	require.NoError(t, err)
	require.Equal(t, 3, b.Due)
	require.Equal(t, Epoch, b.Oldest)

	got, err := e.S.ClaimChatMessages(ctx, 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, got, 3)
	for i, m := range got {
		require.Equal(t, ids[i], m.ID, "oldest first")
		require.JSONEq(t, fmt.Sprintf(`{"title":"message %d"}`, i), string(m.Content))
	}
	again, err := e.S.ClaimChatMessages(ctx, 10, time.Minute)
	require.NoError(t, err)
	require.Empty(t, again, "claimed messages are not claimed twice")

	done, err := e.S.ChatMessageDelivered(ctx, store.ChatDelivery{ID: ids[0], Version: 1, PlatformID: "1700000000.000100"})
	require.NoError(t, err)
	require.Equal(t, store.ChatMessageDone, done.State)
	require.Equal(t, "1700000000.000100", done.PlatformID)
	require.Equal(t, 1, done.SentVersion)

	// An update of a delivered message makes it due again, and its
	// platform id stays.
	up, err := e.S.SetChatMessageContent(ctx, ids[0], content(t, "message 0, later"))
	require.NoError(t, err)
	require.Equal(t, store.ChatMessageDue, up.State)
	require.Equal(t, 2, up.Version)
	got, err = e.S.ClaimChatMessages(ctx, 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, ids[0], got[0].ID)
	done, err = e.S.ChatMessageDelivered(ctx, store.ChatDelivery{ID: ids[0], Version: 2})
	require.NoError(t, err)
	require.Equal(t, store.ChatMessageDone, done.State)
	require.Equal(t, "1700000000.000100", done.PlatformID)

	b, err = e.S.ChatBacklog(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, b.Due, "the two claimed and not delivered are still due")
}

func testOutboxKeyIsOneMessage(t *testing.T, e *Env) {
	ctx := t.Context()
	first, created, err := e.S.QueueChatMessage(ctx, store.ChatMessage{Key: "alert-group:{}:{alertname=\"X\"}", Channel: "C1", Content: content(t, "first")})
	require.NoError(t, err)
	require.True(t, created)
	second, created, err := e.S.QueueChatMessage(ctx, store.ChatMessage{Key: "alert-group:{}:{alertname=\"X\"}", Channel: "C1", Content: content(t, "second")})
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, first.ID, second.ID)
	require.JSONEq(t, `{"title":"first"}`, string(second.Content), "the existing message's content is kept")
	got, err := e.S.GetChatMessage(ctx, first.ID)
	require.NoError(t, err)
	require.Equal(t, first.Key, got.Key)
}

// Content set while a sender delivers an older version is not lost: the
// message stays due for it.
func testOutboxNewerContentStaysDue(t *testing.T, e *Env) {
	ctx := t.Context()
	m := queueMessage(t, e.S, "C1", "v1")
	claimed, err := e.S.ClaimChatMessages(ctx, 1, time.Minute)
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	_, err = e.S.SetChatMessageContent(ctx, m.ID, content(t, "v2"))
	require.NoError(t, err)
	got, err := e.S.ChatMessageDelivered(ctx, store.ChatDelivery{ID: m.ID, Version: claimed[0].Version, PlatformID: "1.2"})
	require.NoError(t, err)
	require.Equal(t, store.ChatMessageDue, got.State)
	require.Equal(t, 1, got.SentVersion)
	require.Equal(t, 2, got.Version)
	// A late report of the first delivery cannot lower what was sent.
	_, err = e.S.ChatMessageDelivered(ctx, store.ChatDelivery{ID: m.ID, Version: 2})
	require.NoError(t, err)
	got, err = e.S.ChatMessageDelivered(ctx, store.ChatDelivery{ID: m.ID, Version: 1})
	require.NoError(t, err)
	require.Equal(t, 2, got.SentVersion)
	require.Equal(t, store.ChatMessageDone, got.State)
}

func testOutboxClaimedOnce(t *testing.T, e *Env) {
	const n = 40
	for i := range n {
		queueMessage(t, e.S, fmt.Sprintf("C%d", i%3), fmt.Sprintf("m%d", i))
	}
	stores := openReplicas(t, e)
	var (
		mu      sync.Mutex
		claimed = map[string][]int{}
	)
	atOnce(stores, func(i int, s store.Store) {
		for {
			got, err := s.ClaimChatMessages(t.Context(), 3, time.Minute)
			if err != nil {
				t.Errorf("replica %d: %v", i, err)
				return
			}
			if len(got) == 0 {
				return
			}
			mu.Lock()
			for _, m := range got {
				claimed[m.ID] = append(claimed[m.ID], i)
			}
			mu.Unlock()
		}
	})
	require.Len(t, claimed, n)
	for id, by := range claimed {
		require.Len(t, by, 1, "message %s claimed by replicas %v", id, by)
	}
}

func testOutboxClaimRunsOut(t *testing.T, e *Env) {
	ctx := t.Context()
	m := queueMessage(t, e.S, "C1", "hello")
	other := e.OpenAs(t, "storetest/replica-1")
	got, err := e.S.ClaimChatMessages(ctx, 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, got, 1)
	got, err = other.ClaimChatMessages(ctx, 10, time.Minute)
	require.NoError(t, err)
	require.Empty(t, got, "held by a live claim")
	e.Clock.Advance(time.Minute + time.Second)
	got, err = other.ClaimChatMessages(ctx, 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, got, 1, "a claim that ran out is taken over")
	require.Equal(t, m.ID, got[0].ID)
}

func testOutboxDeferred(t *testing.T, e *Env) {
	ctx := t.Context()
	m := queueMessage(t, e.S, "C1", "hello")
	_, err := e.S.ClaimChatMessages(ctx, 1, time.Minute)
	require.NoError(t, err)
	d, err := e.S.ChatMessageDeferred(ctx, store.ChatDeferral{ID: m.ID, Until: e.Clock.Now().Add(5 * time.Second), Failed: true, Reason: "slack: 500"})
	require.NoError(t, err)
	require.Equal(t, store.ChatMessageDue, d.State)
	require.Equal(t, 1, d.Attempts)
	require.Equal(t, "slack: 500", d.LastError)
	got, err := e.S.ClaimChatMessages(ctx, 1, time.Minute)
	require.NoError(t, err)
	require.Empty(t, got, "not due before its time")
	e.Clock.Advance(5 * time.Second)
	got, err = e.S.ClaimChatMessages(ctx, 1, time.Minute)
	require.NoError(t, err)
	require.Len(t, got, 1)
	d, err = e.S.ChatMessageDeferred(ctx, store.ChatDeferral{ID: m.ID, Until: e.Clock.Now(), GiveUp: true, Reason: "channel_not_found"})
	require.NoError(t, err)
	require.Equal(t, store.ChatMessageFailed, d.State)
	require.Equal(t, 2, d.Attempts)
	// A message whose post was refused has nothing to update.
	d, err = e.S.SetChatMessageContent(ctx, m.ID, content(t, "later"))
	require.NoError(t, err)
	require.Equal(t, store.ChatMessageFailed, d.State)
	got, err = e.S.ClaimChatMessages(ctx, 1, time.Minute)
	require.NoError(t, err)
	require.Empty(t, got)
	b, err := e.S.ChatBacklog(ctx)
	require.NoError(t, err)
	require.Zero(t, b.Due)
	require.True(t, b.Oldest.IsZero())
}

func testOutboxRefuses(t *testing.T, e *Env) {
	ctx := t.Context()
	_, _, err := e.S.QueueChatMessage(ctx, store.ChatMessage{Content: content(t, "x")})
	require.ErrorContains(t, err, "a channel is required")
	_, _, err = e.S.QueueChatMessage(ctx, store.ChatMessage{Channel: "C1", Content: json.RawMessage("{not json")})
	require.ErrorContains(t, err, "content must be JSON")
	_, err = e.S.SetChatMessageContent(ctx, "m-nope", content(t, "x"))
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = e.S.GetChatMessage(ctx, "m-nope")
	require.ErrorIs(t, err, store.ErrNotFound)
}

// A dead process's claims are released by recovery, so that what it was
// delivering is delivered at once, not when the claims run out.
func testOutboxClaimsOfTheDeadReleased(t *testing.T, e *Env) {
	ctx := t.Context()
	m := queueMessage(t, e.S, "C1", "hello")
	dying := e.OpenAs(t, "storetest/replica-1")
	got, err := dying.ClaimChatMessages(ctx, 10, 5*time.Minute)
	require.NoError(t, err)
	require.Len(t, got, 1)
	rec, err := e.S.MarkInterrupted(ctx)
	require.NoError(t, err)
	require.Zero(t, rec.ChatMessages, "a live claimer keeps its claims")
	e.Kill("storetest/replica-1")
	rec, err = e.S.MarkInterrupted(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, rec.ChatMessages)
	got, err = e.S.ClaimChatMessages(ctx, 10, 5*time.Minute)
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, m.ID, got[0].ID)
}
