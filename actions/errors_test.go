package actions_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/actions"
)

// lost is a runner's error for a connection that broke while a command ran.
type lost struct{}

func (lost) Error() string        { return "connection lost before the command finished" }
func (lost) OutcomeUnknown() bool { return true }

// An action whose command may or may not have run is told apart from one
// that failed: a broken connection (as a runner marks it) or a deadline
// that passed while it ran leave its outcome unknown; a refusal does not.
func TestOutcomeUnknown(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		err     error
		unknown bool
	}{
		{"connection lost mid-command", fmt.Errorf("run command on gpu-1: %w", lost{}), true},
		{"deadline passed mid-command", fmt.Errorf("restart: %w", context.DeadlineExceeded), true},
		{"the command failed", errors.New("exit status 1: unit not found"), false},
		{"the target changed", fmt.Errorf("apply: %w", actions.ErrPlanStale), false},
		{"no error", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.unknown, actions.OutcomeUnknown(tc.err))
		})
	}
}
