package runbooks_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/engine"
)

// TestExpressionFailureIsNamed: a finding whose steps all ran but whose
// expression fails on what they saw (int("") of a value an empty capture
// group gave) is inconclusive with a reason that says the expression
// failed, the error and the values it read, and the report does not say
// a step could not run.
func TestExpressionFailureIsNamed(t *testing.T) {
	rb, problems, err := runbooks.LoadFile(filepath.Join("testdata", "exprfail", "log-disk.yaml"))
	require.NoError(t, err)
	require.NoError(t, problems.Err())
	require.Len(t, problems, 1, "lint warns about the empty capture: %v", problems)

	e := localEngine(t)
	p, err := e.Prepare(t.Context(), rb, map[string]string{"host": "here"})
	require.NoError(t, err)
	rep := e.Run(t.Context(), p, engine.RunOptions{})

	require.Equal(t, runbooks.OutcomeInconclusive, rep.Outcome)
	require.Len(t, rep.Inconclusive, 1)
	f := rep.Inconclusive[0]
	require.Equal(t, "disk_full", f.ID)
	require.True(t, f.ExpressionFailed)
	require.Contains(t, f.Reason, "the expression could not be evaluated: ")
	require.Equal(t, `the expression could not be evaluated: invalid operation: int(); it read steps.disk.values["pct"] = ""`, f.Reason)
	require.NotContains(t, f.Reason, "\n", "the reason is one line")
	require.True(t, rep.ExpressionFailed())
	require.False(t, rep.StepsNotRun(), "every step ran")
	require.True(t, rep.Unobserved(), "Unobserved keeps its meaning")
}
