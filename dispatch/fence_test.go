package dispatch

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Fence cancels what runs, with ErrLeaseLost as the cause each task sees,
// and leaves the group able to start new work afterwards.
func TestFenceCancelsRunningWork(t *testing.T) {
	t.Parallel()
	ts := newTasks(slog.New(slog.DiscardHandler))
	causes := make(chan error, 2)
	for range 2 {
		require.NoError(t, ts.Go("apply", time.Hour, func(ctx context.Context) {
			<-ctx.Done()
			causes <- context.Cause(ctx)
		}))
	}
	require.Equal(t, 2, ts.Fence(ErrLeaseLost))
	require.NoError(t, ts.Idle(t.Context()))
	for range 2 {
		require.ErrorIs(t, <-causes, ErrLeaseLost)
	}

	ran := make(chan struct{})
	require.NoError(t, ts.Go("after", time.Hour, func(context.Context) { close(ran) }))
	<-ran
	require.NoError(t, ts.Idle(t.Context()))
	require.Zero(t, ts.Fence(errors.New("nothing runs")))
}
