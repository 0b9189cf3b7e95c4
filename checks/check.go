// Package checks holds runbot's check types: each one observes something on a
// target (a probe, a counter sample, a log gap, a flag) and returns typed
// values for findings plus evidence lines for humans.
package checks

import (
	"context"
	"time"

	"github.com/runbot/runbot/internal/argspec"
	"github.com/runbot/runbot/internal/step"
	"github.com/runbot/runbot/internal/target"
)

// Check is one check type. Implementations are stateless; everything a run
// needs arrives in Env.
type Check interface {
	// Plan describes, without doing anything, each command or request Run
	// would make. `runbot explain` prints it.
	Plan(env Env) []string
	// Run observes the target. An error means the check could not observe
	// (host unreachable, command missing); what it observed, however bad,
	// is returned as a Result.
	Run(ctx context.Context, env Env) (step.Result, error)
}

// Env is everything one execution of a check receives.
type Env struct {
	Target target.Target
	Args   argspec.Values
	// Now is the clock; tests inject a fixed one.
	Now func() time.Time
	// RunStarted is when the run began, for windows such as "since the run
	// started".
	RunStarted time.Time
	// Observed holds the events recorded by the steps this step needs, so
	// a log check can attribute error lines to this run's own probes.
	Observed []step.Event
	// Tape, when set, carries the network checks' exchanges and waits, to
	// record them or to replay recorded ones (see Tape).
	Tape Tape
}

// Type registers one check type: its spec and implementation.
type Type struct {
	Spec  argspec.Spec
	Check Check
	// Timeout is the step timeout when a runbook sets none.
	Timeout time.Duration
}
