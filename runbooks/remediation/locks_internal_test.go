package remediation

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestLockOutlivesTheApply: a deployment lock taken under an apply's
// deadline lasts until that deadline and a minute more, never less than
// 30 minutes, so that it cannot lapse under a live apply.
func TestLockOutlivesTheApply(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		deadline time.Duration // 0: none
		min, max time.Duration
	}{
		{"no deadline", 0, 30 * time.Minute, 30 * time.Minute},
		{"deadline sooner than 30m", 10 * time.Minute, 30 * time.Minute, 30 * time.Minute},
		{"apply_timeout of 2h", 2 * time.Hour, 2*time.Hour + 59*time.Second, 2*time.Hour + time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			if tc.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.deadline)
				defer cancel()
			}
			got := lockTTL(ctx)
			require.GreaterOrEqual(t, got, tc.min)
			require.LessOrEqual(t, got, tc.max)
		})
	}
}
