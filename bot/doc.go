// Package bot is runbot's Slack front: the /runbot slash command, the run
// messages that fill in live as steps finish and end with the diagnosis and
// its evidence, and the Approve / Deny / Dry-run buttons of a proposed
// remediation. It speaks to Slack over HTTP (signed requests) or Socket
// Mode with the same handlers.
//
// The Dispatcher is the reusable core every trigger goes through: a Slack
// command, an alert or a schedule submits a Request; the Dispatcher queues
// it durably (deduplicated by the request's key), runs it after the
// trigger was acknowledged, records it in the store and keeps one Slack
// message per run up to date.
package bot
