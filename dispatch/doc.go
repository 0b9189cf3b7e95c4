// Package dispatch is runbot's core, the one every trigger goes through,
// and it knows no chat platform. A trigger (a chat command, an alert, a
// schedule) builds a Request and submits it; the Dispatcher validates it,
// queues it durably (deduplicated by its key), claims it from the work
// queue, runs and records it through the one recording path
// (record.Recorder), keeps one message per run up to date through a
// chat.Chat when one is configured (logging otherwise), proposes the
// remediation its diagnosis asks for, and applies it once Vote settles it
// as approved. RunNow runs a request the trigger waits for (a scheduled
// audit) through the same path, in the same run slots.
package dispatch
