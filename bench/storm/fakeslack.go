package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// slackMode is how the fake Slack answers.
type slackMode string

const (
	// permissive accepts every call at once: the storm goes at runbot's
	// own pace.
	permissive slackMode = "permissive"
	// limits enforces Slack's documented rate limits and answers 429 with
	// Retry-After beyond them, as Slack does.
	limits slackMode = "limits"
)

// Slack's documented limits, as the limits mode enforces them, each a
// token bucket. chat.postMessage allows about one message per second per
// channel with short bursts; chat.update is a Tier 3 method, about 50 calls
// a minute for the workspace, with a small burst. Every other method is
// accepted at once: runbot calls them rarely in a storm, and their tiers
// (files.*: Tier 2 and 4) would not be what bounds it.
const (
	postBurst       = 3
	postPerSecond   = 1.0
	updateBurst     = 5
	updatePerSecond = 50.0 / 60
)

// slackCall is one chat.postMessage or chat.update the fake Slack
// accepted.
type slackCall struct {
	At      time.Time
	Method  string
	Channel string
	// TS is the message's ts: the one handed out for a post, the one
	// updated for an update.
	TS string
	// ThreadTS is set on a post that replies in a thread.
	ThreadTS string
	// Content is the message's fallback text, a newline and its Block Kit
	// blocks as the raw JSON runbot sent.
	Content string
}

// slackCounts are the fake Slack's counters.
type slackCounts struct {
	TopLevel, Replies, Updates int
	// Limited counts the 429s answered, by method.
	Limited map[string]int
	// Other counts the accepted calls of other methods (files.*,
	// chat.postEphemeral, auth.test, uploads), by method.
	Other map[string]int
}

func (c slackCounts) limited() int {
	n := 0
	for _, v := range c.Limited {
		n += v
	}
	return n
}

// fakeSlack is a Slack Web API on loopback that the real slack-go client
// talks to (slackchat.Config.APIURL). It answers the methods runbot calls
// (chat.postMessage, chat.update, chat.postEphemeral, auth.test,
// usergroups.users.list and the three steps of a file upload), and keeps
// every post and update it accepted with the time it accepted it.
type fakeSlack struct {
	mode slackMode
	srv  *http.Server
	base string // http://127.0.0.1:port/

	mu      sync.Mutex
	nextTS  int
	nextID  int
	posts   map[string]*bucket // by channel
	updates *bucket
	calls   []slackCall
	counts  slackCounts
	// last is when the latest call of any method was accepted.
	last time.Time
}

// startFakeSlack serves a fake Slack on a loopback port until close.
func startFakeSlack(ctx context.Context, mode slackMode) (*fakeSlack, error) {
	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fake slack: %w", err)
	}
	now := time.Now()
	f := &fakeSlack{
		mode: mode, base: "http://" + l.Addr().String() + "/",
		posts:   map[string]*bucket{},
		updates: newBucket(updateBurst, updatePerSecond, now),
		counts:  slackCounts{Limited: map[string]int{}, Other: map[string]int{}},
		last:    now,
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/{method}", f.api)
	mux.HandleFunc("POST /upload/{file}", f.upload)
	f.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = f.srv.Serve(l) }()
	return f, nil
}

// apiURL is the base URL for slackchat.Config.APIURL.
func (f *fakeSlack) apiURL() string { return f.base + "api/" }

func (f *fakeSlack) close() { _ = f.srv.Close() }

// lastAccepted is when the fake Slack last accepted a call.
func (f *fakeSlack) lastAccepted() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last
}

// snapshot returns the accepted posts and updates, in the order they were
// accepted, and the counters.
func (f *fakeSlack) snapshot() ([]slackCall, slackCounts) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.counts
	c.Limited, c.Other = copyCounts(c.Limited), copyCounts(c.Other)
	return append([]slackCall(nil), f.calls...), c
}

// progress returns the counters alone, cheaply.
func (f *fakeSlack) progress() slackCounts {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.counts
	c.Limited, c.Other = copyCounts(c.Limited), copyCounts(c.Other)
	return c
}

func copyCounts(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func (f *fakeSlack) api(w http.ResponseWriter, r *http.Request) {
	method := r.PathValue("method")
	// slack-go sends every method runbot calls form-encoded.
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"ok": false, "error": "invalid_form_data"})
		return
	}
	now := time.Now()
	f.mu.Lock()
	if retry, ok := f.admit(method, r.PostForm.Get("channel"), now); !ok {
		f.counts.Limited[method]++
		f.mu.Unlock()
		// slack-go turns a 429 with Retry-After into a
		// *slack.RateLimitedError, which is how runbot knows to wait.
		w.Header().Set("Retry-After", strconv.Itoa(retry))
		writeJSON(w, http.StatusTooManyRequests, map[string]any{"ok": false, "error": "ratelimited"})
		return
	}
	f.last = now
	resp := f.answer(method, r.PostForm, now)
	f.mu.Unlock()
	writeJSON(w, http.StatusOK, resp)
}

// admit takes a token for a rate-limited call, or says in how many whole
// seconds (at least one) the next one is available. Callers hold f.mu.
func (f *fakeSlack) admit(method, channel string, now time.Time) (int, bool) {
	if f.mode != limits {
		return 0, true
	}
	var b *bucket
	switch method {
	case "chat.postMessage":
		if b = f.posts[channel]; b == nil {
			b = newBucket(postBurst, postPerSecond, now)
			f.posts[channel] = b
		}
	case "chat.update":
		b = f.updates
	default:
		return 0, true
	}
	return b.take(now)
}

// answer is the reply to an accepted call. Callers hold f.mu.
func (f *fakeSlack) answer(method string, form url.Values, now time.Time) any {
	channel := form.Get("channel")
	switch method {
	case "chat.postMessage":
		ts, thread := f.ts(), form.Get("thread_ts")
		f.record(now, method, channel, ts, thread, form)
		if thread == "" {
			f.counts.TopLevel++
		} else {
			f.counts.Replies++
		}
		return map[string]any{"ok": true, "channel": channel, "ts": ts,
			"message": map[string]any{"type": "message", "text": form.Get("text"), "ts": ts, "thread_ts": thread}}
	case "chat.update":
		ts := form.Get("ts")
		f.record(now, method, channel, ts, "", form)
		f.counts.Updates++
		return map[string]any{"ok": true, "channel": channel, "ts": ts, "text": form.Get("text")}
	}
	f.counts.Other[method]++
	switch method {
	case "chat.postEphemeral":
		return map[string]any{"ok": true, "message_ts": f.ts()}
	case "auth.test":
		return map[string]any{"ok": true, "url": "https://runbot-bench.slack.com/", "team": "runbot-bench",
			"user": "runbot", "team_id": "T0BENCH", "user_id": "U0RUNBOT"}
	case "usergroups.users.list":
		return map[string]any{"ok": true, "users": []string{}}
	case "files.getUploadURLExternal":
		f.nextID++
		id := fmt.Sprintf("F%08d", f.nextID)
		// The upload URL must be on the API's host: slack-go sends the
		// token only there.
		return map[string]any{"ok": true, "upload_url": f.base + "upload/" + id, "file_id": id}
	case "files.completeUploadExternal":
		var files []map[string]any
		_ = json.Unmarshal([]byte(form.Get("files")), &files)
		return map[string]any{"ok": true, "files": files}
	}
	return map[string]any{"ok": false, "error": "unknown_method"}
}

// upload takes the bytes of a file upload (the step between
// files.getUploadURLExternal and files.completeUploadExternal).
func (f *fakeSlack) upload(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	f.mu.Lock()
	f.counts.Other["upload"]++
	f.last = time.Now()
	f.mu.Unlock()
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, "OK - "+strconv.Itoa(int(r.ContentLength)))
}

// record keeps an accepted post or update. Callers hold f.mu.
func (f *fakeSlack) record(at time.Time, method, channel, ts, thread string, form url.Values) {
	f.calls = append(f.calls, slackCall{
		At: at, Method: method, Channel: channel, TS: ts, ThreadTS: thread,
		Content: form.Get("text") + "\n" + form.Get("blocks"),
	})
}

// ts hands out distinct, increasing message timestamps in Slack's form.
// Callers hold f.mu.
func (f *fakeSlack) ts() string {
	f.nextTS++
	return fmt.Sprintf("1700000000.%06d", f.nextTS)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// bucket is a token bucket: up to burst calls at once, refilled at
// perSecond tokens a second.
type bucket struct {
	tokens, burst, perSecond float64
	at                       time.Time
}

func newBucket(burst, perSecond float64, now time.Time) *bucket {
	return &bucket{tokens: burst, burst: burst, perSecond: perSecond, at: now}
}

// take spends a token, or returns the whole seconds (at least one, as
// Slack's Retry-After) until one is available; a refused call spends none.
func (b *bucket) take(now time.Time) (int, bool) {
	b.tokens = min(b.burst, b.tokens+now.Sub(b.at).Seconds()*b.perSecond)
	b.at = now
	if b.tokens >= 1 {
		b.tokens--
		return 0, true
	}
	wait := (1 - b.tokens) / b.perSecond
	return max(1, int(math.Ceil(wait))), false
}
