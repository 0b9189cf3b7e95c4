// Package bot is runbot's Slack front and its alert receiver: the /runbot
// slash command, the Approve / Deny / Dry-run buttons of a proposed
// remediation, Slack as a chat.Chat (Block Kit, redacted, over HTTP or
// Socket Mode with the same handlers), and the Alertmanager and generic
// alert webhooks. Every trigger only builds requests and calls the
// dispatch core (package dispatch), which runs, records and posts them;
// the scheduler is its own trigger package (schedule).
package bot
