package main

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/redact"
	"github.com/runbot/runbot/internal/secret"
)

// TestCommandErrorsAreRedacted: the error a command ends with goes to
// stderr and may quote what a command printed (an action that failed with
// a secret param in its output); it is hidden as the output is, the
// values the command added while it ran (AlsoHide) included, and it still
// says what happened to errors.Is and errors.As.
func TestCommandErrorsAreRedacted(t *testing.T) {
	t.Parallel()
	r, err := redact.New(nil)
	require.NoError(t, err)
	cmd := &cobra.Command{}
	var stdout bytes.Buffer
	cmd.SetOut(&stdout)
	o, flush := redactOutput(cmd, r, "", false)
	_, err = o.AlsoHide(secret.New("param-9f2c71d3"))
	require.NoError(t, err)
	_, _ = fmt.Fprintln(cmd.OutOrStdout(), "given param-9f2c71d3")

	cause := exitError{code: exitCritical}
	runErr := fmt.Errorf("apply plan p-1: action 0 failed: it printed param-9f2c71d3 and password=hunter2 here: %w", cause)
	flush(&runErr)
	require.Equal(t, "given [redacted]\n", stdout.String())
	require.Equal(t, "apply plan p-1: action 0 failed: it printed [redacted] and password=[redacted] here: exit 2", runErr.Error())
	var ee exitError
	require.ErrorAs(t, runErr, &ee)
	require.Equal(t, exitCritical, ee.code)
	require.ErrorIs(t, runErr, cause)

	var none error
	flush(&none)
	require.NoError(t, none, "a command that succeeded still succeeds")
}
