package remote_test

import (
	"context"
	"testing"
	"time"
)

// testCtx bounds a test's remote work generously: a deadline that only a
// hang would reach.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}
