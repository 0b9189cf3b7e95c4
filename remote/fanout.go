package remote

import (
	"context"
	"sync"
	"time"
)

// HostResult is what one host's part of a FanOut came to.
type HostResult struct {
	Host string
	// Err is fn's error, or why the host could not be reached.
	Err      error
	Duration time.Duration
}

// FanOut calls fn once per runner, at most parallelism at a time (all at
// once when parallelism <= 0), and returns one result per runner in the same
// order. A failing or unreachable host does not stop the others; ctx bounds
// them all, and hosts not started when ctx ends report its error.
func FanOut(ctx context.Context, runners []Runner, parallelism int, fn func(ctx context.Context, r Runner) error) []HostResult {
	names := make([]string, len(runners))
	for i, r := range runners {
		names[i] = r.Host()
	}
	return FanOutNamed(ctx, names, parallelism, func(ctx context.Context, i int) error {
		return fn(ctx, runners[i])
	})
}

// FanOutNamed is FanOut for callers that reach each host themselves: fn
// gets the index of the host in names, and each result carries its name.
func FanOutNamed(ctx context.Context, names []string, parallelism int, fn func(ctx context.Context, i int) error) []HostResult {
	if parallelism <= 0 || parallelism > len(names) {
		parallelism = len(names)
	}
	results := make([]HostResult, len(names))
	slots := make(chan struct{}, parallelism)
	var wg sync.WaitGroup
	for i, name := range names {
		results[i].Host = name
		acquired := false
		select {
		case slots <- struct{}{}:
			acquired = true
		case <-ctx.Done():
		}
		// Checked after taking a slot too: when both were ready, select may
		// have picked the slot.
		if ctx.Err() != nil {
			if acquired {
				<-slots
			}
			results[i].Err = context.Cause(ctx)
			continue
		}
		wg.Go(func() {
			defer func() { <-slots }()
			start := time.Now()
			results[i].Err = fn(ctx, i)
			results[i].Duration = time.Since(start)
		})
	}
	wg.Wait()
	return results
}
