// Package console is what runbot prints for a person at a terminal: a
// run's report and its progress, a remediation plan, a fleet run's
// summary, the runs in the store and one run's record, the runbooks and
// what a run would do, and a failed runbook test. It renders what it is
// given and decides nothing: the commands in cmd/runbot choose what to
// show, and the JSON they print is the types' own.
package console
