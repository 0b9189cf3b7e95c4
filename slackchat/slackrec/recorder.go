// Package slackrec is a fake Slack Web API for tests: slack-go's slacktest
// server with handlers for the methods runbot calls (chat.postMessage,
// chat.update, chat.postEphemeral, usergroups.users.list, response_url
// posts), each recording every call it gets. Tests read the calls back,
// wait for them, and script failures such as a 429 with Retry-After.
//
// The stock slacktest chat handlers cannot be read back and chat.update is
// missing, so this package overrides them through slacktest's Binder hook.
// The server is still slacktest's, so Socket Mode (apps.connections.open
// and its WebSocket) works against it too.
package slackrec

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack/slacktest"
)

// Call is one request the fake Slack received.
type Call struct {
	// Method is the Web API method ("chat.update"), or "response_url" for
	// a post to a response URL.
	Method string
	// Path is the request's URL path: for a response_url post, it ends
	// in the id given to ResponseURL.
	Path string
	// Form holds the form fields of a form-encoded call (slack-go sends
	// the bot token as the field "token").
	Form url.Values
	// Body is the raw body (the JSON of a response_url post).
	Body   []byte
	Header http.Header
	// Status is the HTTP status the fake answered with.
	Status int
	// TS is the ts the fake gave a message it posted.
	TS string
}

// Blocks decodes the call's Block Kit blocks: the "blocks" form field, or
// the "blocks" member of a JSON body.
func (c Call) Blocks() []map[string]any {
	var raw []byte
	if b := c.Form.Get("blocks"); b != "" {
		raw = []byte(b)
	} else if len(c.Body) > 0 {
		var m struct {
			Blocks json.RawMessage `json:"blocks"`
		}
		if json.Unmarshal(c.Body, &m) == nil {
			raw = m.Blocks
		}
	}
	var blocks []map[string]any
	_ = json.Unmarshal(raw, &blocks)
	return blocks
}

// Text returns every human-readable text of the call, the fallback text
// and each block's text joined by newlines, for "the message says X"
// assertions.
func (c Call) Text() string {
	var parts []string
	if t := c.Form.Get("text"); t != "" {
		parts = append(parts, t)
	}
	if len(c.Body) > 0 {
		var m struct {
			Text string `json:"text"`
		}
		if json.Unmarshal(c.Body, &m) == nil && m.Text != "" {
			parts = append(parts, m.Text)
		}
	}
	for _, b := range c.Blocks() {
		collectText(b, &parts)
	}
	return strings.Join(parts, "\n")
}

func collectText(v any, out *[]string) {
	switch x := v.(type) {
	case map[string]any:
		if t, ok := x["text"].(string); ok {
			*out = append(*out, t)
		}
		for k, child := range x {
			if k != "text" || !isString(child) {
				collectText(child, out)
			}
		}
	case []any:
		for _, child := range x {
			collectText(child, out)
		}
	}
}

func isString(v any) bool { _, ok := v.(string); return ok }

// Recorder is the fake Slack. It is safe for concurrent use.
type Recorder struct {
	srv *slacktest.Server

	mu      sync.Mutex
	calls   []Call
	changed chan struct{} // closed and replaced on every call
	fail    map[string][]Failure
	groups  map[string][]string
	nextTS  int
	stop    chan struct{}
}

// Failure is a scripted answer for the next call of a method.
type Failure struct {
	// Status is the HTTP status, e.g. 429.
	Status int
	// RetryAfter is the Retry-After header in seconds (for 429).
	RetryAfter int
	// Error is a Slack error code answered with ok:false and HTTP 200
	// (e.g. "not_in_channel") when Status is 0.
	Error string
}

// New starts a fake Slack. Close it when done.
func New() *Recorder {
	r := &Recorder{
		changed: make(chan struct{}),
		fail:    map[string][]Failure{},
		groups:  map[string][]string{},
		nextTS:  100,
		stop:    make(chan struct{}),
	}
	r.srv = slacktest.NewTestServer(func(c slacktest.Customize) {
		c.Handle("/chat.postMessage", r.handler("chat.postMessage", r.postMessage))
		c.Handle("/chat.update", r.handler("chat.update", r.update))
		c.Handle("/chat.postEphemeral", r.handler("chat.postEphemeral", r.postEphemeral))
		c.Handle("/usergroups.users.list", r.handler("usergroups.users.list", r.groupMembers))
		// auth.test is recorded so that a test can make it fail (FailNext):
		// it is how the daemon probes that Slack answers.
		c.Handle("/auth.test", r.handler("auth.test", func(url.Values) any {
			return map[string]any{"ok": true, "url": "https://runbot-test.slack.com/", "team": "runbot-test", "user": "runbot", "team_id": "T0RUNBOT", "user_id": "U0RUNBOT"}
		}))
		c.Handle("/response/", r.handler("response_url", func(url.Values) any { return map[string]any{"ok": true} }))
	})
	r.srv.Start()
	// slacktest's WebSocket read loop hands every inbound message to an
	// unbuffered channel and blocks until someone takes it.
	go func() {
		for {
			select {
			case <-r.srv.SeenFeed:
			case <-r.stop:
				return
			}
		}
	}()
	return r
}

// Close stops the server.
func (r *Recorder) Close() {
	close(r.stop)
	r.srv.Stop()
}

// Server is the underlying slacktest server (for Socket Mode tests).
func (r *Recorder) Server() *slacktest.Server { return r.srv }

// APIURL is the base URL to pass to slack.OptionAPIURL.
func (r *Recorder) APIURL() string { return r.srv.GetAPIURL() }

// ResponseURL returns a response_url that records posts to it.
func (r *Recorder) ResponseURL(id string) string {
	return r.srv.GetAPIURL() + "response/" + url.PathEscape(id)
}

// SetUserGroup sets the members usergroups.users.list returns for a group.
func (r *Recorder) SetUserGroup(id string, members ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.groups[id] = members
}

// FailNext makes the next calls of method answer with the given failures,
// one per call, in order.
func (r *Recorder) FailNext(method string, f ...Failure) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fail[method] = append(r.fail[method], f...)
}

// Calls returns the calls of the given methods (all calls when none are
// given), in arrival order.
func (r *Recorder) Calls(methods ...string) []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Call
	for _, c := range r.calls {
		if len(methods) == 0 || contains(methods, c.Method) {
			out = append(out, c)
		}
	}
	return out
}

// WaitFor blocks until cond holds for the calls so far, or the context
// ends; it returns the calls it saw last.
func (r *Recorder) WaitFor(ctx context.Context, cond func([]Call) bool) ([]Call, error) {
	for {
		r.mu.Lock()
		calls, changed := append([]Call(nil), r.calls...), r.changed
		r.mu.Unlock()
		if cond(calls) {
			return calls, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return calls, fmt.Errorf("waiting for slack calls: %w", context.Cause(ctx))
		}
	}
}

// WaitTimeout is WaitFor with a timeout.
func (r *Recorder) WaitTimeout(d time.Duration, cond func([]Call) bool) ([]Call, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return r.WaitFor(ctx, cond)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (r *Recorder) handler(method string, answer func(url.Values) any) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		form := url.Values{}
		if strings.HasPrefix(req.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
			form, _ = url.ParseQuery(string(body))
		}
		call := Call{Method: method, Path: req.URL.Path, Form: form, Body: body, Header: req.Header.Clone(), Status: http.StatusOK}
		r.mu.Lock()
		var f *Failure
		if q := r.fail[method]; len(q) > 0 {
			f, r.fail[method] = &q[0], q[1:]
		}
		var resp any
		switch {
		case f != nil && f.Status != 0:
			call.Status = f.Status
		case f != nil:
			resp = map[string]any{"ok": false, "error": f.Error}
		default:
			resp = answer(form)
			if m, ok := resp.(map[string]any); ok && method == "chat.postMessage" {
				call.TS, _ = m["ts"].(string)
			}
		}
		r.calls = append(r.calls, call)
		close(r.changed)
		r.changed = make(chan struct{})
		r.mu.Unlock()

		if call.Status != http.StatusOK {
			if f.RetryAfter > 0 {
				w.Header().Set("Retry-After", fmt.Sprint(f.RetryAfter))
			}
			w.WriteHeader(call.Status)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(resp)
	}
}

// ts hands out distinct, increasing message timestamps (the stock
// slacktest gives two posts in the same second the same ts). Callers hold
// r.mu.
func (r *Recorder) ts() string {
	r.nextTS++
	return fmt.Sprintf("1700000000.%06d", r.nextTS)
}

func (r *Recorder) postMessage(form url.Values) any {
	return map[string]any{"ok": true, "channel": form.Get("channel"), "ts": r.ts()}
}

func (r *Recorder) update(form url.Values) any {
	return map[string]any{"ok": true, "channel": form.Get("channel"), "ts": form.Get("ts"), "text": form.Get("text")}
}

func (r *Recorder) postEphemeral(url.Values) any {
	return map[string]any{"ok": true, "message_ts": r.ts()}
}

func (r *Recorder) groupMembers(form url.Values) any {
	members, ok := r.groups[form.Get("usergroup")]
	if !ok {
		return map[string]any{"ok": false, "error": "no_such_subteam"}
	}
	return map[string]any{"ok": true, "users": members}
}
