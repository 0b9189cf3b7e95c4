package engine

import (
	"time"

	"github.com/runbot/runbot/checks"
	"github.com/runbot/runbot/internal/step"
	"github.com/runbot/runbot/internal/target"
	"github.com/runbot/runbot/runbooks"
)

// Tape stands between a run and everything its checks observe, so that a
// run can be recorded and a recording replayed (package replay:
// replay.NewRecording, replay.Replay).
//
// The seam is chosen where replay is exact and still exercises the checks:
// a check that runs commands gets a remote.Runner and a service manager
// whose calls the tape keeps or answers (command line -> stdout, stderr,
// exit status; unit -> properties), and a network check gets a
// checks.Tape that keeps or answers its exchanges (probe -> what the probe
// saw; scrape -> the raw exposition). Every reading of the clock a check
// makes goes through the tape too. A replay therefore runs the very same
// check code, parsing and summarising the recorded text under the current
// runbook's arguments, and only the outside world is taped. Recording the
// step results instead would be exact too, but a changed threshold or
// pattern in the runbook would then not change what replay reports.
type Tape interface {
	// Target returns the tape of one target of one step (index is the
	// target's position among the step's targets).
	Target(stepID string, index int, t target.Target) TargetTape
	// RunTime returns when the run started, finished or settled its
	// verdict: live, the time given, which a recording keeps; replayed,
	// the recorded time.
	RunTime(m RunMoment, live time.Time) time.Time
}

// RunMoment names a moment of a run that a tape keeps.
type RunMoment string

// The moments of a run a tape keeps.
const (
	RunStarted  RunMoment = "started"
	RunFinished RunMoment = "finished"
	RunVerdict  RunMoment = "verdict"
)

// TargetTape is the tape of one step on one target.
type TargetTape interface {
	// Bind returns the target with its runner and service manager routed
	// through the tape, the check's clock, and the network checks' tape.
	Bind(t target.Target, now func() time.Time) (target.Target, func() time.Time, checks.Tape)
	// Replayed returns, in a replay, how a target run ends without
	// running its check (check names the step's check type): one that
	// did not complete, or one recorded as its result only; ok is false
	// when the check is to run.
	Replayed(check string) (out TapedOutcome, ok bool)
	// Finish is told what the target run became; a replay sets the
	// recorded start and duration on it.
	Finish(tr *runbooks.TargetRun)
}

// TapedOutcome is how a replayed target run ended: its status and error,
// and, for a run recorded as its result only (runbot show --export), the
// check's values, evidence and events.
type TapedOutcome struct {
	Status step.Status
	Error  string
	Result *step.Result
}
