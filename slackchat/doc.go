// Package slackchat is the Slack platform of the chat seam. Slack (New) is
// a chat.Chat, chat.Replier and chat.UserGroups: messages rendered as
// Block Kit and redacted, rate limits waited out, files uploaded into
// threads, ephemeral replies and response_url posts, user groups looked
// up and cached. Receiver (NewReceiver) takes what Slack sends, signed
// HTTP requests or Socket Mode events, verifies it, parses slash commands
// and button clicks into chat.Command and chat.Click for a chat.Handler
// (package commands), and answers in Block Kit. It knows no trigger and no
// dispatch core, only the chat seam; slackrec is a fake Slack Web API for
// tests.
package slackchat
