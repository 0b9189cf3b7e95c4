package chat

import "context"

// Recipient is one person to answer privately: who they are, the channel
// they acted in, and the opaque reply target their command or click
// carried (Command.ReplyTo, Click.ReplyTo), which only the platform that
// made it can read.
type Recipient struct {
	User    string
	Channel string
	ReplyTo string
}

// Replier is a chat that can show a message to one person only: in the
// channel they acted in when User and Channel are set, else (or when that
// fails) at their reply target. Slack shows an ephemeral message, or
// posts to the response_url.
type Replier interface {
	Reply(ctx context.Context, to Recipient, m Message) error
}
