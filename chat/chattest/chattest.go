// Package chattest is a chat platform that records what it is asked to
// post, update, upload and reply, and answers user group lookups, for tests of the dispatcher and the
// triggers that need no real chat platform.
package chattest

import (
	"context"
	"fmt"
	"sync"

	"github.com/runbot/runbot/chat"
)

// Platform is the platform name of the references a Recorder hands out.
const Platform = "chattest"

// Post is one message posted, with every update it got since.
type Post struct {
	Ref     chat.Ref
	Thread  string
	Message chat.Message
	Updates []chat.Message
}

// Last is the newest content of the message.
func (p Post) Last() chat.Message {
	if len(p.Updates) > 0 {
		return p.Updates[len(p.Updates)-1]
	}
	return p.Message
}

// Upload is one file uploaded into a thread.
type Upload struct {
	Channel string
	Thread  string
	File    chat.File
}

// Reply is one message shown to one person only.
type Reply struct {
	To      chat.Recipient
	Message chat.Message
}

// Refusal is a call that failed (FailNext, Err): what was tried.
type Refusal struct {
	Op      Op
	Channel string
	Message chat.Message
	Err     error
}

// Op names a call of the chat, for FailNext.
type Op string

const (
	OpPost   Op = "post"
	OpUpdate Op = "update"
	OpUpload Op = "upload"
	OpReply  Op = "reply"
	// OpUserGroup is a user group lookup.
	OpUserGroup Op = "user group"
)

// Recorder is a chat.Chat and chat.Replier that keeps everything in
// memory. Err, when set, fails every call with it; FailNext fails chosen
// calls once.
type Recorder struct {
	Err error

	mu      sync.Mutex
	posts   []*Post
	uploads []Upload
	replies []Reply
	refused []Refusal
	fail    map[Op][]error
	groups  map[string][]string
	// changed is closed and replaced whenever a call was recorded.
	changed chan struct{}
}

var (
	_ chat.Chat       = (*Recorder)(nil)
	_ chat.Replier    = (*Recorder)(nil)
	_ chat.UserGroups = (*Recorder)(nil)
)

// New returns an empty Recorder.
func New() *Recorder {
	return &Recorder{fail: map[Op][]error{}, groups: map[string][]string{}, changed: make(chan struct{})}
}

// FailNext makes the next call of op fail with err (calls queue up: two
// FailNext fail the next two calls).
func (r *Recorder) FailNext(op Op, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fail[op] = append(r.fail[op], err)
}

// failing returns the error the call of op fails with, if any, and keeps
// the refusal. Callers hold r.mu.
func (r *Recorder) failing(op Op, channel string, m chat.Message) error {
	err := r.Err
	if q := r.fail[op]; err == nil && len(q) > 0 {
		r.fail[op], err = q[1:], q[0]
	}
	if err != nil {
		r.refused = append(r.refused, Refusal{Op: op, Channel: channel, Message: m, Err: err})
	}
	return err
}

// recorded wakes Wait. Callers hold r.mu.
func (r *Recorder) recorded() {
	close(r.changed)
	r.changed = make(chan struct{})
}

// Post implements chat.Chat.
func (r *Recorder) Post(_ context.Context, channel, thread string, m chat.Message) (chat.Ref, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.failing(OpPost, channel, m); err != nil {
		return chat.Ref{}, err
	}
	ref := chat.Ref{Platform: Platform, Channel: channel, ID: fmt.Sprintf("m%d", len(r.posts)+1)}
	r.posts = append(r.posts, &Post{Ref: ref, Thread: thread, Message: m})
	r.recorded()
	return ref, nil
}

// Update implements chat.Chat.
func (r *Recorder) Update(_ context.Context, ref chat.Ref, m chat.Message) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.failing(OpUpdate, ref.Channel, m); err != nil {
		return err
	}
	for _, p := range r.posts {
		if p.Ref.Channel == ref.Channel && p.Ref.ID == ref.ID {
			p.Updates = append(p.Updates, m)
			r.recorded()
			return nil
		}
	}
	return fmt.Errorf("no message %s in %s", ref.ID, ref.Channel)
}

// Upload implements chat.Chat.
func (r *Recorder) Upload(_ context.Context, channel, thread string, f chat.File) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.failing(OpUpload, channel, chat.Message{Title: f.Title}); err != nil {
		return err
	}
	r.uploads = append(r.uploads, Upload{Channel: channel, Thread: thread, File: f})
	r.recorded()
	return nil
}

// Reply implements chat.Replier.
func (r *Recorder) Reply(_ context.Context, to chat.Recipient, m chat.Message) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.failing(OpReply, to.Channel, m); err != nil {
		return err
	}
	r.replies = append(r.replies, Reply{To: to, Message: m})
	r.recorded()
	return nil
}

// SetUserGroup makes the platform's user group id hold exactly members.
func (r *Recorder) SetUserGroup(id string, members ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.groups[id] = members
}

// UserGroupMembers implements chat.UserGroups; a group never set is an
// error, as a platform answers for an id it does not know.
func (r *Recorder) UserGroupMembers(_ context.Context, id string) ([]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.failing(OpUserGroup, "", chat.Message{}); err != nil {
		return nil, err
	}
	members, ok := r.groups[id]
	if !ok {
		return nil, fmt.Errorf("no user group %s", id)
	}
	return append([]string(nil), members...), nil
}

// Posts returns copies of the messages posted so far, oldest first.
func (r *Recorder) Posts() []Post {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Post, len(r.posts))
	for i, p := range r.posts {
		out[i] = *p
		out[i].Updates = append([]chat.Message(nil), p.Updates...)
	}
	return out
}

// Uploads returns the files uploaded so far, oldest first.
func (r *Recorder) Uploads() []Upload {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Upload(nil), r.uploads...)
}

// Replies returns the private replies so far, oldest first.
func (r *Recorder) Replies() []Reply {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Reply(nil), r.replies...)
}

// Refusals returns the calls that failed, oldest first.
func (r *Recorder) Refusals() []Refusal {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Refusal(nil), r.refused...)
}

// Calls counts every call that was recorded: posts, updates, uploads and
// replies.
func (r *Recorder) Calls() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(r.uploads) + len(r.replies)
	for _, p := range r.posts {
		n += 1 + len(p.Updates)
	}
	return n
}

// Wait returns once done holds for the posts so far, checking after every
// recorded call, or with ctx's cause when ctx ends first.
func (r *Recorder) Wait(ctx context.Context, done func(posts []Post) bool) error {
	for {
		r.mu.Lock()
		changed := r.changed
		r.mu.Unlock()
		if done(r.Posts()) {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("waiting for the chat: %w", context.Cause(ctx))
		}
	}
}
