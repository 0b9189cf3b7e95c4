package runbooks

// Observer is told about every step, run and remediation outcome, e.g. to
// export metrics. Implementations must be quick and safe for concurrent use.
type Observer interface {
	StepFinished(rb string, tr *TargetRun)
	RunFinished(rep *Report)
	RemediationFinished(remediation string, res *ApplyResult)
}
