package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/store"
)

// tickTests hold the store to the per-tick claims that make a schedule
// fire once per tick across replicas, and catch up a tick whose claimer
// died.
var tickTests = []test{
	{"ClaimedOnceAcrossReplicas", testTickClaimedOnce},
	{"CatchUpTakesOverFromADeadClaimer", testTickCatchUpTakesOver},
	{"CatchUpNeedsAnEarlierTick", testTickCatchUpNeedsEarlierTick},
	{"MissedTickIsRecorded", testTickMissedIsRecorded},
	{"RefusesBadClaims", testTickRefusesBadClaims},
}

// tickAt is the tick the tick tests claim: a round minute after Epoch.
var tickAt = Epoch.Truncate(time.Minute).Add(time.Minute)

// Every replica claims the same tick at once: exactly one gets it, the
// others are told who holds it, and only the holder can finish it.
func testTickClaimedOnce(t *testing.T, e *Env) {
	stores := openReplicas(t, e)
	var (
		mu      sync.Mutex
		winners []string
		holders []string
	)
	atOnce(stores, func(i int, s store.Store) {
		tk, err := s.ClaimTick(t.Context(), store.TickClaim{Schedule: "wedge dsv4", At: tickAt})
		var claimed *store.TickClaimedError
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err == nil:
			winners = append(winners, tk.Owner)
		case errors.As(err, &claimed):
			holders = append(holders, claimed.Owner)
		default:
			t.Errorf("replica %d: %v", i, err)
		}
	})
	require.Len(t, winners, 1)
	require.Len(t, holders, Replicas-1)
	for _, h := range holders {
		require.Equal(t, winners[0], h)
	}
	for i, s := range stores {
		if fmt.Sprintf("storetest/replica-%d", i) == winners[0] {
			continue
		}
		_, err := s.FinishTick(t.Context(), "wedge dsv4", tickAt, "r-other")
		var claimed *store.TickClaimedError
		require.ErrorAs(t, err, &claimed, "only the holder finishes the tick")
	}
	for i, s := range stores {
		if fmt.Sprintf("storetest/replica-%d", i) == winners[0] {
			_, err := s.FinishTick(t.Context(), "wedge dsv4", tickAt, "r-1")
			require.NoError(t, err)
		}
	}
	ticks, err := e.S.Ticks(t.Context(), "wedge dsv4", 0)
	require.NoError(t, err)
	require.Len(t, ticks, 1)
	require.Equal(t, store.TickDone, ticks[0].State)
	require.Equal(t, "r-1", ticks[0].RunID)
	require.Equal(t, winners[0], ticks[0].Owner)
	require.Len(t, AuditKinds(t, e.S, store.AuditFilter{Kind: store.AuditTickClaimed}), 1)
}

// A replica claims a tick and dies before it finishes. A catch-up claim by
// another replica is refused while the claimer's lease holds and takes
// the tick over once it expired; a plain claim never takes a tick over.
func testTickCatchUpTakesOver(t *testing.T, e *Env) {
	ctx := t.Context()
	a := e.OpenAs(t, "storetest/replica-a")
	b := e.OpenAs(t, "storetest/replica-b")
	_, err := a.Heartbeat(ctx, store.DefaultLeaseTTL)
	require.NoError(t, err)
	_, err = a.ClaimTick(ctx, store.TickClaim{Schedule: "wedge dsv4", At: tickAt})
	require.NoError(t, err)

	var claimed *store.TickClaimedError
	_, err = b.ClaimTick(ctx, store.TickClaim{Schedule: "wedge dsv4", At: tickAt, CatchUp: true})
	require.ErrorAs(t, err, &claimed, "A's lease holds")
	require.Equal(t, "storetest/replica-a", claimed.Owner)

	e.Clock.Advance(store.DefaultLeaseTTL)
	_, err = b.ClaimTick(ctx, store.TickClaim{Schedule: "wedge dsv4", At: tickAt})
	require.ErrorAs(t, err, &claimed, "a plain claim does not take over")
	tk, err := b.ClaimTick(ctx, store.TickClaim{Schedule: "wedge dsv4", At: tickAt, CatchUp: true})
	require.NoError(t, err)
	require.Equal(t, store.Tick{Schedule: "wedge dsv4", At: tickAt, State: store.TickClaimed, Owner: "storetest/replica-b",
		CatchUp: true, TakenOverFrom: "storetest/replica-a", ClaimedAt: e.Clock.Now()}, tk)

	_, err = a.FinishTick(ctx, "wedge dsv4", tickAt, "r-late")
	require.ErrorAs(t, err, &claimed, "A, back too late, cannot finish what B took over")
	done, err := b.FinishTick(ctx, "wedge dsv4", tickAt, "r-b")
	require.NoError(t, err)
	require.Equal(t, store.TickDone, done.State)
	require.True(t, done.CatchUp)
	_, err = b.ClaimTick(ctx, store.TickClaim{Schedule: "wedge dsv4", At: tickAt, CatchUp: true})
	require.ErrorAs(t, err, &claimed, "a finished tick is never caught up again")
}

// A catch-up of a schedule that has no earlier tick on record is refused:
// a schedule new to the cluster missed nothing. Once an earlier tick is on
// record, the gap after it is caught up.
func testTickCatchUpNeedsEarlierTick(t *testing.T, e *Env) {
	ctx := t.Context()
	_, err := e.S.ClaimTick(ctx, store.TickClaim{Schedule: "wedge dsv4", At: tickAt, CatchUp: true})
	require.ErrorIs(t, err, store.ErrNothingToCatchUp)
	ticks, err := e.S.Ticks(ctx, "wedge dsv4", 0)
	require.NoError(t, err)
	require.Empty(t, ticks, "nothing recorded")

	_, err = e.S.ClaimTick(ctx, store.TickClaim{Schedule: "wedge dsv4", At: tickAt.Add(-10 * time.Minute)})
	require.NoError(t, err)
	tk, err := e.S.ClaimTick(ctx, store.TickClaim{Schedule: "wedge dsv4", At: tickAt, CatchUp: true})
	require.NoError(t, err)
	require.True(t, tk.CatchUp)
	require.Empty(t, tk.TakenOverFrom)
}

// A tick found too late to catch up is recorded as missed, done at once,
// and can be claimed no more.
func testTickMissedIsRecorded(t *testing.T, e *Env) {
	ctx := t.Context()
	tk, err := e.S.ClaimTick(ctx, store.TickClaim{Schedule: "wedge dsv4", At: tickAt, State: store.TickMissed})
	require.NoError(t, err)
	require.Equal(t, store.TickMissed, tk.State)
	require.Equal(t, e.Clock.Now(), tk.DoneAt)
	var claimed *store.TickClaimedError
	_, err = e.S.ClaimTick(ctx, store.TickClaim{Schedule: "wedge dsv4", At: tickAt, CatchUp: true})
	require.ErrorAs(t, err, &claimed)
	require.Equal(t, store.TickMissed, claimed.State)
}

// A claim without a schedule, a time or with a state a claim cannot make
// is refused, and nothing is recorded.
func testTickRefusesBadClaims(t *testing.T, e *Env) {
	for _, tc := range []struct {
		name string
		c    store.TickClaim
	}{
		{"no schedule", store.TickClaim{At: tickAt}},
		{"no time", store.TickClaim{Schedule: "wedge dsv4"}},
		{"done", store.TickClaim{Schedule: "wedge dsv4", At: tickAt, State: store.TickDone}},
		{"unknown state", store.TickClaim{Schedule: "wedge dsv4", At: tickAt, State: "later"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.S.ClaimTick(t.Context(), tc.c)
			require.ErrorContains(t, err, "claim tick: a schedule, a tick time and a state of claimed, skipped or missed are required")
			ticks, err := e.S.Ticks(t.Context(), "wedge dsv4", 0)
			require.NoError(t, err)
			require.Empty(t, ticks)
		})
	}
}
