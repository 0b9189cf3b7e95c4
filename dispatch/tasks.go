package dispatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"
)

// ErrShuttingDown is returned for work offered after Shutdown began
// (Dispatcher.Go, and so Submit and Vote once runbot is stopping).
var ErrShuttingDown = errors.New("runbot is shutting down")

// tasks runs work after a trigger was acknowledged: each task in its own
// goroutine with its own context and deadline, detached from the request
// that started it, and tracked so that shutdown can wait for it.
type tasks struct {
	log *slog.Logger

	mu      sync.Mutex
	wg      sync.WaitGroup
	closed  bool
	next    uint64
	cancels map[uint64]context.CancelCauseFunc
	// idle is closed when no task runs; nil while tasks run.
	idle chan struct{}
	n    int
}

func newTasks(log *slog.Logger) *tasks {
	idle := make(chan struct{})
	close(idle)
	return &tasks{log: log, cancels: map[uint64]context.CancelCauseFunc{}, idle: idle}
}

// Go runs fn in the background under a fresh context that ends after
// timeout or when shutdown gives up waiting. It returns ErrShuttingDown,
// and does not run fn, once Shutdown has begun.
func (t *tasks) Go(name string, timeout time.Duration, fn func(ctx context.Context)) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return ErrShuttingDown
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	ctx, stop := context.WithTimeoutCause(ctx, timeout, fmt.Errorf("%s took longer than %s", name, timeout))
	id := t.next
	t.next++
	t.cancels[id] = cancel
	if t.n == 0 {
		t.idle = make(chan struct{})
	}
	t.n++
	t.wg.Add(1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				t.log.Error("background task panicked", "task", name, "panic", r, "stack", string(debug.Stack()))
			}
			stop()
			cancel(nil)
			t.mu.Lock()
			delete(t.cancels, id)
			t.n--
			if t.n == 0 {
				close(t.idle)
			}
			t.mu.Unlock()
			t.wg.Done()
		}()
		fn(ctx)
	}()
	return nil
}

// Idle waits until no task runs (new ones may start after).
func (t *tasks) Idle(ctx context.Context) error {
	for {
		t.mu.Lock()
		idle, n := t.idle, t.n
		t.mu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-idle:
		case <-ctx.Done():
			return fmt.Errorf("waiting for background work: %w", context.Cause(ctx))
		}
	}
}

// Shutdown refuses new tasks and waits for running ones. When ctx ends
// first, it cancels them and waits for them to return.
func (t *tasks) Shutdown(ctx context.Context) error {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	done := make(chan struct{})
	go func() {
		t.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	t.mu.Lock()
	for _, cancel := range t.cancels {
		cancel(ErrShuttingDown)
	}
	t.mu.Unlock()
	<-done
	return fmt.Errorf("shutdown: cancelled background work: %w", context.Cause(ctx))
}
