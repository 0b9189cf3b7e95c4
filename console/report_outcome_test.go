package console_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/console"
	"github.com/runbot/runbot/internal/step"
	"github.com/runbot/runbot/runbooks"
)

// TestInconclusiveOutcomeSaysWhy: the outcome line of an inconclusive run
// names what kept it from a verdict, and says steps could not run only
// when one did not.
func TestInconclusiveOutcomeSaysWhy(t *testing.T) {
	t.Parallel()
	exprFailed := runbooks.FindingResult{ID: "disk_full", Reason: `the expression could not be evaluated: invalid operation: int(); it read steps.disk.values["pct"] = ""`, ExpressionFailed: true}
	notRun := runbooks.FindingResult{ID: "log_growth", Reason: "step logs on host did not run: timeout"}
	for _, tc := range []struct {
		name         string
		inconclusive []runbooks.FindingResult
		stepFailed   bool
		undiagnosed  bool
		want         string
	}{
		{name: "an expression failed", inconclusive: []runbooks.FindingResult{exprFailed}, want: "an expression could not be evaluated on what the steps saw"},
		{name: "a step did not run", inconclusive: []runbooks.FindingResult{notRun}, stepFailed: true, want: "some steps could not run"},
		{name: "both", inconclusive: []runbooks.FindingResult{exprFailed, notRun}, stepFailed: true, want: "some steps could not run, and an expression could not be evaluated"},
		{name: "no diagnosis", undiagnosed: true, want: "no diagnosis holds: the runbook does not cover what it saw"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			start := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
			rep := &runbooks.Report{RunID: "r-1", Runbook: "log-disk", StartedAt: start, VerdictAt: start, FinishedAt: start.Add(time.Second),
				Outcome: runbooks.OutcomeInconclusive, Inconclusive: tc.inconclusive, Undiagnosed: tc.undiagnosed,
				Steps: []*runbooks.TargetRun{{Step: "disk", Check: "command", Target: "host", Host: "web-1", Status: step.OK}}}
			if tc.stepFailed {
				rep.Steps = append(rep.Steps, &runbooks.TargetRun{Step: "logs", Check: "command", Target: "host", Host: "web-1", Status: step.Timeout, Error: "timeout"})
			}
			var buf bytes.Buffer
			require.NoError(t, console.Report(&buf, rep, false))
			require.Contains(t, buf.String(), "Outcome: inconclusive — "+tc.want+"\n")
		})
	}
}
