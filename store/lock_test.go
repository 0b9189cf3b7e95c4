package store_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/store"
)

func TestLockExcludesUntilReleased(t *testing.T) {
	s, c := openTest(t)
	ctx := testCtx(t)
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

	kinds := auditKinds(t, s, store.AuditFilter{})
	require.Equal(t, []string{store.AuditLockAcquired, store.AuditLockAcquired, store.AuditLockReleased, store.AuditLockAcquired}, kinds)
}

func TestLockExpiresAndLosesToTheNextHolder(t *testing.T) {
	s, c := openTest(t)
	ctx := testCtx(t)
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

func TestLockRaceAcrossGoroutines(t *testing.T) {
	s, _ := openTest(t)
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		winner []string
	)
	for i := range 8 {
		wg.Go(func() {
			holder := string(rune('a' + i))
			_, err := s.Acquire(testCtx(t), "deployment/dsv4", holder, time.Minute)
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
