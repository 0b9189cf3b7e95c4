package dispatch

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

func TestShutdownWaitsForTasks(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ts := newTasks(quietLog())
		finished := false
		require.NoError(t, ts.Go("slow", time.Hour, func(ctx context.Context) {
			time.Sleep(10 * time.Second)
			finished = true
		}))
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		require.NoError(t, ts.Shutdown(ctx))
		require.True(t, finished)
		require.ErrorIs(t, ts.Go("late", time.Hour, func(context.Context) {}), ErrShuttingDown)
	})
}

func TestShutdownCancelsTasksWhenItRunsOutOfTime(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ts := newTasks(quietLog())
		var cause error
		require.NoError(t, ts.Go("stuck", time.Hour, func(ctx context.Context) {
			<-ctx.Done()
			cause = context.Cause(ctx)
		}))
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		start := time.Now()
		err := ts.Shutdown(ctx)
		require.Error(t, err)
		require.Equal(t, 5*time.Second, time.Since(start))
		require.ErrorIs(t, cause, ErrShuttingDown)
	})
}

func TestTaskDeadlineAndPanic(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ts := newTasks(quietLog())
		var cause error
		require.NoError(t, ts.Go("run x", 3*time.Second, func(ctx context.Context) {
			<-ctx.Done()
			cause = context.Cause(ctx)
		}))
		require.NoError(t, ts.Go("boom", time.Second, func(context.Context) { panic("boom") }))
		require.NoError(t, ts.Idle(t.Context()))
		require.EqualError(t, cause, "run x took longer than 3s")
	})
}
