// Package run holds the words that the runbook language and the store
// share about one run of a runbook: what started it (Trigger) and what it
// found (Outcome). The language may not import the store, nor the store the
// language, so the types live here, below both: runbooks.Outcome and
// store.Outcome are this one Outcome, runbooks.Trigger and store.Trigger
// this one Trigger, and no layer converts between them.
package run

import "slices"

// Trigger says what started a run. Its text is what reports, recordings,
// the store and the audit log keep.
type Trigger string

const (
	// TriggerCLI is the command line; replayed recordings say it too.
	TriggerCLI Trigger = "cli"
	// TriggerChat is a chat command, on whichever platform. Its stored
	// value is "chat", and history and show print "chat". Runbot stored
	// it as "slack" before; opening an older database migrates the old
	// value "slack" to "chat" in runs, work, reports and the audit log
	// (store/migrations/0009_trigger_chat.sql,
	// store/migrations/postgres/0007_trigger_chat.sql), and the store
	// refuses "slack" from then on.
	TriggerChat Trigger = "chat"
	// TriggerAlert is an alert that a runbook's alert trigger matched.
	TriggerAlert Trigger = "alert"
	// TriggerSchedule is the scheduler.
	TriggerSchedule Trigger = "schedule"
	// TriggerPrecheck is a remediation running the diagnosis again right
	// before it applies a plan. It is part of the remediation, never a
	// recorded run of its own.
	TriggerPrecheck Trigger = "precheck"
	// TriggerVerify is a remediation running its verify steps after it
	// applied a plan. It is part of the remediation, never a recorded run
	// of its own.
	TriggerVerify Trigger = "verify"
)

// recorded is the one list of the triggers of a recorded run. The store
// refuses runs and work of any other kind, and so does the bot; the SQL
// CHECKs on runs.trigger_type and work.trigger_type repeat it as a safety
// net, and a test of the store fails when they differ from it.
var recorded = []Trigger{TriggerCLI, TriggerChat, TriggerAlert, TriggerSchedule}

// RecordedTriggers returns every trigger a recorded run may have.
func RecordedTriggers() []Trigger { return slices.Clone(recorded) }

// Valid reports whether t is one of RecordedTriggers: a trigger that starts
// a run the store keeps. TriggerPrecheck and TriggerVerify are not.
func (t Trigger) Valid() bool { return slices.Contains(recorded, t) }

// Outcome is a run's verdict: what a report concludes (ok, critical or
// inconclusive), and for a stored run also none yet or error.
type Outcome string

const (
	// OutcomeNone is a run that has not finished.
	OutcomeNone Outcome = ""
	// OutcomeOK: every step ran and nothing critical was found.
	OutcomeOK Outcome = "ok"
	// OutcomeCritical: a critical finding or diagnosis.
	OutcomeCritical Outcome = "critical"
	// OutcomeInconclusive: nothing critical, but the run cannot say the
	// service is fine: some findings could not be evaluated because their
	// steps did not run, or the runbook has diagnoses and none held
	// (Undiagnosed).
	OutcomeInconclusive Outcome = "inconclusive"
	// OutcomeError is a run the engine could not carry out, so there is no
	// report to conclude from.
	OutcomeError Outcome = "error"
)

// Valid reports whether o is one of the outcomes above.
func (o Outcome) Valid() bool {
	switch o {
	case OutcomeNone, OutcomeOK, OutcomeCritical, OutcomeInconclusive, OutcomeError:
		return true
	}
	return false
}
