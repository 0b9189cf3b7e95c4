package daemon

import (
	"context"
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

// A process paused past its lease (a VM suspended, a machine frozen) wakes
// with its renewal and its watch due at once; the renewal succeeds (the
// lease is taken again) but must not let the applies in flight go on,
// since another replica may have taken them over meanwhile: whichever
// wakes first, they are stopped, once. A renewal in time stops nothing.
func TestLeaseFenceAfterAPause(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ttl, beat := store.DefaultLeaseTTL, store.DefaultHeartbeat
		for _, tc := range []struct {
			name   string
			paused time.Duration
			fenced int32
		}{
			{name: "renewed in time", paused: beat, fenced: 0},
			{name: "renewed within the margin", paused: ttl - fenceMargin, fenced: 1},
			{name: "renewed after the lease lapsed", paused: 3 * ttl, fenced: 1},
		} {
			var fenced atomic.Int32
			// No watch runs: the renewal comes first after the pause.
			f := &leaseFence{now: time.Now, fence: func() { fenced.Add(1) }}
			f.renewed(time.Now().Add(ttl))
			time.Sleep(tc.paused)
			f.renewed(time.Now().Add(ttl))
			require.Equal(t, tc.fenced, fenced.Load(), tc.name)

			// The watch that wakes next finds the lease renewed: no second
			// fence for the same lapse.
			ctx, cancel := context.WithCancel(t.Context())
			go f.watch(ctx)
			time.Sleep(beat)
			synctest.Wait()
			require.Equal(t, tc.fenced, fenced.Load(), tc.name)
			cancel()
			synctest.Wait()
		}
	})
}
