package dispatch

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// A fence cancels what is guarded when it comes, with ErrLeaseLost as the
// cause, and nothing guarded after it or already done.
func TestFenceCancelsTheAppliesInFlight(t *testing.T) {
	t.Parallel()
	var f fenceSet
	a, doneA := f.guard(t.Context())
	b, doneB := f.guard(t.Context())
	_, doneEarly := f.guard(t.Context())
	doneEarly()
	require.Equal(t, 2, f.fence(ErrLeaseLost))
	for _, ctx := range []context.Context{a, b} {
		<-ctx.Done()
		require.ErrorIs(t, context.Cause(ctx), ErrLeaseLost)
	}
	doneA()
	doneB()
	later, doneLater := f.guard(t.Context())
	defer doneLater()
	require.NoError(t, later.Err(), "a fence does not reach what starts after it")
	require.Equal(t, 1, f.fence(ErrLeaseLost))
}
