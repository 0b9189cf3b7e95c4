package chat

import "context"

// Command is a command someone typed to runbot in a chat (Slack's
// "/runbot …"), as the platform received it.
type Command struct {
	// ID identifies the delivery: a platform that delivers one command
	// again (Slack retries when it saw no answer) gives it the same ID
	// (Slack's trigger_id). Empty when the platform has none.
	ID      string
	User    string
	Channel string
	// Thread is the thread the command was typed in, when it was.
	Thread string
	// Text is what followed the command's name, as the person typed it:
	// the platform undoes its own escaping first.
	Text string
	// ReplyTo is the platform's opaque reply target for this command
	// (Slack's response_url), for a Recipient.
	ReplyTo string
}

// Click is a press of one of runbot's buttons (Button) on a message.
type Click struct {
	User    string
	Channel string
	// Message is the message whose button was pressed.
	Message Ref
	// Action and Value are the button's ID and Value.
	Action string
	Value  string
	// ReplyTo is the platform's opaque reply target for this click.
	ReplyTo string
}

// Handler takes what a chat platform receives: commands and button
// clicks. A platform verifies and parses its own payloads into these
// types, calls the handler, and renders what comes back its own way.
type Handler interface {
	// Command answers a command with a reply only its author sees. It
	// returns within ctx (Slack waits 3 seconds): a run it starts goes on
	// in the background and posts on its own.
	Command(ctx context.Context, c Command) Message
	// Click handles a button press. It returns within ctx, once what must
	// not be lost (a vote) is recorded, and before the platform
	// acknowledges the click; the rest goes on in the background, and what
	// the clicker should know reaches them through the chat's Replier.
	Click(ctx context.Context, c Click)
}

// UserGroups is a chat platform's own groups of people (Slack's user
// groups), looked up by the platform's id of the group.
type UserGroups interface {
	UserGroupMembers(ctx context.Context, id string) ([]string, error)
}
