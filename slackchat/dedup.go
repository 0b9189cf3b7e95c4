package slackchat

import (
	"sync"
	"time"
)

// dedup remembers keys for a while, so that a redelivered Slack request
// (same action_ts) is handled once.
type dedup struct {
	now func() time.Time
	ttl time.Duration

	mu   sync.Mutex
	keys map[string]time.Time
}

func newDedup(now func() time.Time, ttl time.Duration) *dedup {
	return &dedup{now: now, ttl: ttl, keys: map[string]time.Time{}}
}

// first reports whether key is new, and remembers it.
func (d *dedup) first(key string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.now()
	for k, at := range d.keys {
		if now.Sub(at) > d.ttl {
			delete(d.keys, k)
		}
	}
	if _, ok := d.keys[key]; ok {
		return false
	}
	d.keys[key] = now
	return true
}
