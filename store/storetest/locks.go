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

var lockTests = []test{
	{"ExcludesUntilReleased", testLockExcludesUntilReleased},
	{"ExpiresAndLosesToTheNextHolder", testLockExpiresAndLosesToTheNextHolder},
	{"RaceAcrossGoroutines", testLockRaceAcrossGoroutines},
	{"RaceAcrossStores", testLockRaceAcrossStores},
}

func testLockExcludesUntilReleased(t *testing.T, e *Env) {
	s, c, ctx := e.S, e.Clock, t.Context()
	l, err := s.Acquire(ctx, "deployment/dsv4", "plan p-1", time.Minute)
	require.NoError(t, err)
	require.Equal(t, c.Now(), l.Since)
	require.Equal(t, c.Now().Add(time.Minute), l.Expires)

	c.Advance(10 * time.Second)
	for _, holder := range []string{"plan p-2", "plan p-1"} {
		_, err = s.Acquire(ctx, "deployment/dsv4", holder, time.Minute)
		var locked *store.LockedError
		require.ErrorAs(t, err, &locked, "%s: the lock is not reentrant", holder)
		require.Equal(t, store.LockedError{Key: "deployment/dsv4", Holder: "plan p-1", Since: l.Since, Expires: l.Expires}, *locked)
	}

	_, err = s.Acquire(ctx, "deployment/dsv5", "plan p-2", time.Minute)
	require.NoError(t, err, "other keys are independent")

	require.NoError(t, s.Release(ctx, l))
	require.ErrorIs(t, s.Release(ctx, l), store.ErrLockLost, "a lock is released once")
	_, err = s.Acquire(ctx, "deployment/dsv4", "plan p-2", time.Minute)
	require.NoError(t, err)

	kinds := AuditKinds(t, s, store.AuditFilter{})
	require.Equal(t, []string{store.AuditLockAcquired, store.AuditLockAcquired, store.AuditLockReleased, store.AuditLockAcquired}, kinds)

	for name, f := range map[string]func() error{
		"no key":    func() error { _, err := s.Acquire(ctx, "", "h", time.Minute); return err },
		"no holder": func() error { _, err := s.Acquire(ctx, "k", "", time.Minute); return err },
		"no ttl":    func() error { _, err := s.Acquire(ctx, "k", "h", 0); return err },
	} {
		require.Error(t, f(), name)
	}
}

func testLockExpiresAndLosesToTheNextHolder(t *testing.T, e *Env) {
	s, c, ctx := e.S, e.Clock, t.Context()
	old, err := s.Acquire(ctx, "deployment/dsv4", "crashed", time.Minute)
	require.NoError(t, err)

	c.Advance(time.Minute - time.Nanosecond)
	_, err = s.Acquire(ctx, "deployment/dsv4", "next", time.Minute)
	var locked *store.LockedError
	require.ErrorAs(t, err, &locked, "not expired yet")

	c.Advance(time.Nanosecond)
	next, err := s.Acquire(ctx, "deployment/dsv4", "next", time.Minute)
	require.NoError(t, err, "an expired lease is free")

	_, err = s.Refresh(ctx, old, time.Minute)
	require.ErrorIs(t, err, store.ErrLockLost)
	require.ErrorIs(t, s.Release(ctx, old), store.ErrLockLost, "the old holder cannot release the new holder's lock")

	c.Advance(30 * time.Second)
	next, err = s.Refresh(ctx, next, time.Minute)
	require.NoError(t, err)
	require.Equal(t, c.Now().Add(time.Minute), next.Expires)
	c.Advance(45 * time.Second)
	_, err = s.Acquire(ctx, "deployment/dsv4", "third", time.Minute)
	require.ErrorAs(t, err, &locked, "refresh extended the lease")
	require.Equal(t, "next", locked.Holder)

	events, err := s.Audit(ctx, store.AuditFilter{Kind: store.AuditLockAcquired})
	require.NoError(t, err)
	require.Len(t, events, 2)
	require.Contains(t, string(events[1].Detail), `"expired_holder":"crashed"`)
}

func testLockRaceAcrossGoroutines(t *testing.T, e *Env) {
	s := e.S
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		winner []string
	)
	for i := range 8 {
		wg.Go(func() {
			holder := string(rune('a' + i))
			_, err := s.Acquire(t.Context(), "deployment/dsv4", holder, time.Minute)
			var locked *store.LockedError
			if err != nil && !errors.As(err, &locked) {
				t.Errorf("acquire: %v", err)
			}
			if err == nil {
				mu.Lock()
				winner = append(winner, holder)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.Len(t, winner, 1)
}

// Two processes on one database (two replicas about to remediate the same
// deployment) race for the same free locks: each lock goes to exactly one,
// and the other is told who has it. A lock one holds is refused to the
// other until it is released, whichever process asks.
func testLockRaceAcrossStores(t *testing.T, e *Env) {
	stores := []store.Store{e.S, e.OpenAs(t, "storetest/replica")}
	holders := []string{"runbot@main", "runbot@replica"}
	for i := range 20 {
		key := fmt.Sprintf("deployment/race-%02d", i)
		var (
			wg       sync.WaitGroup
			mu       sync.Mutex
			won      []store.Lock
			loserSaw []string
		)
		for j, s := range stores {
			wg.Go(func() {
				l, err := s.Acquire(t.Context(), key, holders[j], time.Minute)
				var locked *store.LockedError
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					won = append(won, l)
				case errors.As(err, &locked):
					loserSaw = append(loserSaw, locked.Holder)
				default:
					t.Errorf("acquire %s: %v", key, err)
				}
			})
		}
		wg.Wait()
		require.Len(t, won, 1, key)
		require.Equal(t, []string{won[0].Holder}, loserSaw, "%s: the loser names the winner", key)
	}
	l, err := stores[0].Acquire(t.Context(), "deployment/dsv4", holders[0], time.Minute)
	require.NoError(t, err)
	_, err = stores[1].Acquire(t.Context(), "deployment/dsv4", holders[1], time.Minute)
	var locked *store.LockedError
	require.ErrorAs(t, err, &locked)
	require.NoError(t, stores[0].Release(t.Context(), l))
	_, err = stores[1].Acquire(t.Context(), "deployment/dsv4", holders[1], time.Minute)
	require.NoError(t, err, "released in one process, free in the other")
}
