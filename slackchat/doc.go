// Package bot is the Slack platform: Slack as a chat.Chat, chat.Replier
// and chat.UserGroups (messages rendered as Block Kit and redacted, rate
// limits waited out, files uploaded into threads), and the receiving side
// (Bot): signed HTTP requests or Socket Mode, verified, parsed into
// chat.Command and chat.Click for a chat.Handler (the commands package),
// and answered in Block Kit. It knows no runbot trigger and no dispatch
// core: only the chat seam.
package bot
