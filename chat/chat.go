package chat

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Ref says where a posted message is: the platform, the channel and the
// platform's id of the message (Slack's ts). The store keeps it with a run
// as a store.MessageRef, which a Ref converts to and from.
type Ref struct {
	Platform string `json:"platform"`
	Channel  string `json:"channel"`
	ID       string `json:"id"`
}

// Chat is a chat platform as runbot uses it: post a message (as a reply in
// a thread when thread is set: the id of the thread's first message),
// replace a posted message, and upload a file into a thread. A platform
// renders Message its own way and redacts what it posts.
type Chat interface {
	Post(ctx context.Context, channel, thread string, m Message) (Ref, error)
	Update(ctx context.Context, ref Ref, m Message) error
	Upload(ctx context.Context, channel, thread string, f File) error
}

// File is an upload: a picture (the run's timeline) with its name, title
// and the text that describes it to those who cannot see it.
type File struct {
	Name    string
	Title   string
	AltText string
	Data    []byte
}

// RateLimitedError is a platform asking to wait before the next call.
type RateLimitedError struct {
	RetryAfter time.Duration
	Err        error
}

func (e *RateLimitedError) Error() string {
	return fmt.Sprintf("rate limited; retry after %s: %v", e.RetryAfter, e.Err)
}

func (e *RateLimitedError) Unwrap() error { return e.Err }

// RetryAfter returns how long err asks to wait, when it is a rate limit.
func RetryAfter(err error) (time.Duration, bool) {
	var rl *RateLimitedError
	if errors.As(err, &rl) {
		return rl.RetryAfter, true
	}
	return 0, false
}

// RejectedError is a platform refusing a call for good: the channel does
// not exist, the bot is not in it, the message is too long. Trying the
// same call again cannot succeed, unlike after a rate limit, a server
// error or a network failure.
type RejectedError struct {
	Reason string
	Err    error
}

func (e *RejectedError) Error() string { return "refused (" + e.Reason + "): " + e.Err.Error() }

func (e *RejectedError) Unwrap() error { return e.Err }

// Rejected reports whether err is a platform refusing a call for good.
func Rejected(err error) bool {
	var re *RejectedError
	return errors.As(err, &re)
}

// Refusal is whom to tell, and what, when the platform refuses a post for
// good after Post already returned: the person who asked for a run in a
// channel the bot is not in.
type Refusal struct {
	To      Recipient
	Message Message
}

// Queue is a chat whose posts are recorded first and delivered later
// (package outbox), so Post returns before the platform has the message.
// A post that fails there failed to be recorded, never because the
// platform refused it, and a later try may succeed.
type Queue interface {
	// Enqueue is Post once per key: a second Enqueue with a key returns
	// the first one's reference, so a try whose answer was lost (the
	// store took it and the connection broke) can be repeated without
	// posting twice. Should the platform refuse the message for good and
	// r is not nil, r.Message is replied to r.To privately, with the
	// platform's reason added as a note.
	Enqueue(ctx context.Context, key, channel, thread string, m Message, r *Refusal) (Ref, error)
}

// ErrNoChat is what Log answers: no chat platform is configured.
var ErrNoChat = errors.New("no chat platform is configured")
