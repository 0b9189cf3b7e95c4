package remote_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/remote"
)

func TestFanOutBoundsParallelismAndKeepsOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var runners []remote.Runner
		for i := range 7 {
			runners = append(runners, &remote.Local{Name: fmt.Sprintf("h%d", i)})
		}
		var mu sync.Mutex
		running, peak := 0, 0
		results := remote.FanOut(t.Context(), runners, 3, func(ctx context.Context, r remote.Runner) error {
			mu.Lock()
			running++
			peak = max(peak, running)
			mu.Unlock()
			time.Sleep(time.Second)
			mu.Lock()
			running--
			mu.Unlock()
			if r.Host() == "h4" {
				return errors.New("h4 is broken")
			}
			return nil
		})

		require.Equal(t, 3, peak)
		require.Len(t, results, 7)
		for i, res := range results {
			require.Equal(t, fmt.Sprintf("h%d", i), res.Host)
			require.Equal(t, time.Second, res.Duration)
			if i == 4 {
				require.EqualError(t, res.Err, "h4 is broken")
			} else {
				require.NoError(t, res.Err)
			}
		}
	})
}

func TestFanOutStopsStartingHostsWhenCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		runners := []remote.Runner{&remote.Local{Name: "a"}, &remote.Local{Name: "b"}, &remote.Local{Name: "c"}}
		ctx, cancel := context.WithCancelCause(t.Context())
		started := map[string]bool{}
		results := remote.FanOut(ctx, runners, 1, func(ctx context.Context, r remote.Runner) error {
			started[r.Host()] = true
			cancel(errors.New("run aborted"))
			return nil
		})
		require.Equal(t, map[string]bool{"a": true}, started)
		require.NoError(t, results[0].Err)
		require.EqualError(t, results[1].Err, "run aborted")
		require.EqualError(t, results[2].Err, "run aborted")
	})
}
