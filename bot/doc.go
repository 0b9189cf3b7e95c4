// Package bot is runbot's Slack front and its other triggers: the
// /runbot slash command, the Approve / Deny / Dry-run buttons of a
// proposed remediation, Slack as a chat.Chat (Block Kit, redacted, over
// HTTP or Socket Mode with the same handlers), the Alertmanager receiver
// and the scheduler. Every trigger only builds requests and calls the
// dispatch core (package dispatch), which runs, records and posts them.
package bot
