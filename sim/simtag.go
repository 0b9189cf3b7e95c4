package sim

import (
	"strings"
	"sync"
	"time"
)

// simTagHeader marks a request for the simulator's own tools (ctl fault pd-wedge
// follows its burst by it). It is test equipment, like /_sim/state: it never becomes
// the rid, so engine-minted request ids stay as real as they are.
const simTagHeader = "X-Sim-Tag"

// ridTags remembers the X-Sim-Tag of the requests that carried one, by rid.
type ridTags struct {
	mu sync.Mutex
	m  map[string]taggedRID
}

type taggedRID struct {
	tag string
	at  time.Time
}

// note records rid's tag; entries older than ten minutes are dropped, since no
// request waits in a queue that long (the transfer timeouts are 300 s).
func (t *ridTags) note(rid, tag string) {
	if tag == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[string]taggedRID{}
	}
	now := time.Now()
	for k, v := range t.m {
		if now.Sub(v.at) > 10*time.Minute {
			delete(t.m, k)
		}
	}
	t.m[rid] = taggedRID{tag: tag, at: now}
}

// annotate adds, for every "<queue>_rids" list of a scheduler's state, the tags of
// those requests as "<queue>_tags".
func (t *ridTags) annotate(st map[string]any) map[string]any {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, v := range st {
		rids, ok := v.([]string)
		if !ok || !strings.HasSuffix(k, "_rids") {
			continue
		}
		tags := []string{}
		for _, rid := range rids {
			if tr, ok := t.m[rid]; ok {
				tags = append(tags, tr.tag)
			}
		}
		st[strings.TrimSuffix(k, "_rids")+"_tags"] = tags
	}
	return st
}
