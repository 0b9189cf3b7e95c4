// Package chattest is a chat.Chat that records what it is asked to post,
// update and upload, for tests of the dispatcher and the triggers that
// need no chat platform.
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

// Recorder is a chat.Chat that keeps everything in memory. Err, when set,
// fails every call with it.
type Recorder struct {
	mu      sync.Mutex
	posts   []*Post
	uploads []chat.File
	Err     error
}

var _ chat.Chat = (*Recorder)(nil)

// New returns an empty Recorder.
func New() *Recorder { return &Recorder{} }

// Post implements chat.Chat.
func (r *Recorder) Post(_ context.Context, channel, thread string, m chat.Message) (chat.Ref, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.Err != nil {
		return chat.Ref{}, r.Err
	}
	ref := chat.Ref{Platform: Platform, Channel: channel, ID: fmt.Sprintf("m%d", len(r.posts)+1)}
	r.posts = append(r.posts, &Post{Ref: ref, Thread: thread, Message: m})
	return ref, nil
}

// Update implements chat.Chat.
func (r *Recorder) Update(_ context.Context, ref chat.Ref, m chat.Message) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.Err != nil {
		return r.Err
	}
	for _, p := range r.posts {
		if p.Ref.Channel == ref.Channel && p.Ref.ID == ref.ID {
			p.Updates = append(p.Updates, m)
			return nil
		}
	}
	return fmt.Errorf("no message %s in %s", ref.ID, ref.Channel)
}

// Upload implements chat.Chat.
func (r *Recorder) Upload(_ context.Context, _, _ string, f chat.File) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.Err != nil {
		return r.Err
	}
	r.uploads = append(r.uploads, f)
	return nil
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

// Uploads returns the files uploaded so far.
func (r *Recorder) Uploads() []chat.File {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]chat.File(nil), r.uploads...)
}
