package alerts

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/runbot/runbot/store"
)

// alertQueue bounds the alert runs that are accepted and not finished, so
// that a storm of distinct alerts cannot pile up unbounded work: beyond
// the bound the webhook answers 503 before it records anything, and
// Alertmanager delivers again later. A slot is reserved when a
// notification is admitted, becomes a work item when the run is queued,
// and is freed when that work is done (or when the alert turns out not to
// start a run after all).
type alertQueue struct {
	max int

	mu       sync.Mutex
	reserved int
	// work holds queued or running work, as last seen in the store.
	work map[string]struct{}

	// refreshing admits one refresh at a time; last is when it ran.
	refreshing sync.Mutex
	last       time.Time
}

func newAlertQueue(max int) *alertQueue {
	return &alertQueue{max: max, work: map[string]struct{}{}}
}

// depth is how many alert runs are accepted and not finished.
func (q *alertQueue) depth() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.reserved + len(q.work)
}

// reserve takes n slots, or none when that would exceed the bound. An
// empty queue takes any n, so that one group larger than the bound is not
// refused forever.
func (q *alertQueue) reserve(n int) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	used := q.reserved + len(q.work)
	if n > 0 && used > 0 && used+n > q.max {
		return false
	}
	q.reserved += n
	return true
}

// release frees a reserved slot that did not become work.
func (q *alertQueue) release() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.reserved > 0 {
		q.reserved--
	}
}

// queued turns a reserved slot into work.
func (q *alertQueue) queued(workID string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.reserved > 0 {
		q.reserved--
	}
	q.work[workID] = struct{}{}
}

// adopt counts work found in the store at start.
func (q *alertQueue) adopt(workID string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.work[workID] = struct{}{}
}

// unfinished reports whether work is queued or running, as last seen.
func (q *alertQueue) unfinished(workID string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	_, ok := q.work[workID]
	return ok
}

// refresh drops the work the store says is done. Calls closer together
// than minGap do nothing, so a storm of 503s does not become a storm of
// reads.
func (q *alertQueue) refresh(ctx context.Context, st store.WorkQueue, now time.Time, minGap time.Duration) error {
	q.refreshing.Lock()
	defer q.refreshing.Unlock()
	if now.Sub(q.last) < minGap {
		return nil
	}
	q.last = now
	q.mu.Lock()
	ids := slices.Collect(maps.Keys(q.work))
	q.mu.Unlock()
	var errs []error
	for _, id := range ids {
		w, err := st.GetWork(ctx, id)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			errs = append(errs, err)
			continue
		case w.State != store.WorkDone:
			continue
		}
		q.mu.Lock()
		delete(q.work, id)
		q.mu.Unlock()
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("refresh the alert queue: %w", err)
	}
	return nil
}
