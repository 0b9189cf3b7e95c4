package checks

import (
	"context"
	"time"
)

// clock returns env.Now, or the wall clock when the caller left it unset.
func clock(env Env) func() time.Time {
	if env.Now != nil {
		return env.Now
	}
	return time.Now
}

// sleep waits for d or until ctx is done, whichever comes first, and returns
// the context's cause in the latter case. It uses a timer rather than
// time.Sleep so that a cancelled run does not wait out the interval, and so
// that tests under testing/synctest see a durably blocked goroutine.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// round makes a duration readable in evidence: microseconds below a
// millisecond, milliseconds below ten seconds, whole seconds above.
func round(d time.Duration) time.Duration {
	if d < time.Millisecond {
		return d.Round(time.Microsecond)
	}
	if d < 10*time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Second)
}
