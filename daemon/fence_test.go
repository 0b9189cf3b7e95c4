package daemon

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/store"
)

// The fence stops the replica's work fenceMargin before its lease can
// lapse, once per lapse: renewals at the heartbeat keep it quiet, one
// missed renewal costs nothing, two in a row fence before the lease's
// end, and a renewal after that arms it again.
func TestLeaseFence(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var fenced atomic.Int32
		f := &leaseFence{now: time.Now, fence: func() { fenced.Add(1) }}
		go f.watch(t.Context())
		ttl, beat := store.DefaultLeaseTTL, store.DefaultHeartbeat

		// Renewals every heartbeat: never fenced.
		for range 6 {
			f.renewed(time.Now().Add(ttl))
			time.Sleep(beat)
		}
		synctest.Wait()
		require.Zero(t, fenced.Load())

		// The renewal at +beat fails; the one at +2*beat succeeds.
		start := time.Now()
		f.renewed(start.Add(ttl))
		time.Sleep(2 * beat)
		synctest.Wait()
		require.Zero(t, fenced.Load(), "one missed renewal costs nothing")
		f.renewed(time.Now().Add(ttl))

		// Then none succeeds: fenced before the lease ends, once.
		start = time.Now()
		time.Sleep(ttl - fenceMargin - time.Second)
		synctest.Wait()
		require.Zero(t, fenced.Load())
		time.Sleep(time.Second)
		synctest.Wait()
		require.Equal(t, int32(1), fenced.Load(), "fenced by %s, before the lease's %s", time.Since(start), ttl)
		require.Less(t, time.Since(start), ttl)
		time.Sleep(ttl)
		synctest.Wait()
		require.Equal(t, int32(1), fenced.Load(), "once per lapse")

		// The store answers again: renewed, armed again.
		f.renewed(time.Now().Add(ttl))
		time.Sleep(ttl)
		synctest.Wait()
		require.Equal(t, int32(2), fenced.Load())
	})
}
