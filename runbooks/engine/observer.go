package engine

import "github.com/runbot/runbot/runbooks"

// Observer is told about every step and run outcome, e.g. to export
// metrics. Implementations must be quick and safe for concurrent use.
type Observer interface {
	StepFinished(rb string, tr *runbooks.TargetRun)
	RunFinished(rep *runbooks.Report)
}
