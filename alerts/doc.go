// Package alerts is the alert trigger: Alertmanager's webhook and a
// generic JSON webhook, authenticated, with bounded bodies. Each alert is
// recorded in the store before the delivery is acknowledged, routed to a
// runbook (configured routes first, then the runbooks' triggers.alerts),
// deduplicated by fingerprint, and handed to the dispatch core as a
// dispatch.Request, its run threaded under the alert's own message. It
// posts only through chat.Chat; without a chat it logs, and its runs still
// run and are recorded.
package alerts
