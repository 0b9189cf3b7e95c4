package store

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/store/internal/pgtest"
)

// writeTimeout is the deadline of one write in this test: what serve's
// loops give theirs (the chat outbox's store writes, a lease renewal).
const writeTimeout = 10 * time.Second

// The primary's machine freezes (a power cut, a partition: its
// connections go silent, nothing is refused or reset) while the store's
// pool holds a connection to it per slot, and the standby is promoted.
// The first write that meets a silent connection fails at its deadline
// and has the pool drop its idle connections, so the next write connects
// afresh to the new primary: one failed write, not one per pooled
// connection (8, each a whole deadline: over a minute of failed writes,
// lease renewals among them).
func TestFrozenPrimaryCostsOneFailedWrite(t *testing.T) {
	p := pgtest.NewPair(t)
	ctx := t.Context()
	s, err := OpenPostgres(ctx, p.DSN())
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() }) // test cleanup

	// Every slot of the pool holds a connection to the primary.
	var wg sync.WaitGroup
	for range postgresMaxConns {
		wg.Go(func() {
			_, err := s.db.ExecContext(ctx, "SELECT pg_sleep(0.3)")
			require.NoError(t, err)
		})
	}
	wg.Wait()
	require.Equal(t, postgresMaxConns, s.db.Stats().Idle)

	require.NoError(t, p.Primary.Freeze())
	t.Cleanup(func() { _ = p.Primary.Thaw() }) // for the pair's stop
	require.NoError(t, p.Promote())

	start := time.Now()
	failed := 0
	for {
		wctx, cancel := context.WithTimeoutCause(ctx, writeTimeout, errors.New("the write took too long"))
		err := s.PingWrite(wctx)
		cancel()
		if err == nil {
			break
		}
		failed++
		require.Less(t, failed, postgresMaxConns, "writes keep failing: %v", err)
	}
	t.Logf("writes failed before one reached the new primary: %d, in %s", failed, time.Since(start).Round(10*time.Millisecond))
	require.LessOrEqual(t, failed, 1, "one write meets the silent pool; the rest connect afresh")
}
