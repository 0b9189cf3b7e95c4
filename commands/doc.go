// Package commands is the chat-command trigger: runbot's command in a
// chat (run, list, explain, status, history, help, and the runbooks' own
// trigger words) and the Approve / Deny / Dry-run buttons of a proposed
// remediation, as a chat.Handler. It checks who may run what, builds
// requests and votes, and calls the dispatch core; a chat platform only
// parses its payloads into chat.Command and chat.Click and renders what
// comes back. The tokenizer reads command text as data: nothing in it is
// expanded or run.
package commands
