package actions

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/argspec"
	"github.com/runbot/runbot/internal/shell"
)

func TestCommandActionApplyRollback(t *testing.T) {
	flag := filepath.Join(t.TempDir(), "drained flag")
	env := localEnv(argspec.Values{
		"cmd":          "touch " + shell.Quote(flag) + " && echo drained",
		"rollback_cmd": "rm " + shell.Quote(flag),
	})
	var a CommandAction
	plan, err := a.Plan(testCtx(t), env)
	require.NoError(t, err)
	require.True(t, plan.Reversible)
	require.Equal(t, []string{"touch " + shell.Quote(flag) + " && echo drained"}, plan.Commands)
	require.NoFileExists(t, flag, "planning runs nothing")

	// Apply runs what the plan fixed, even if the arguments change later.
	env.Args["cmd"] = "false"
	applied, err := a.Apply(testCtx(t), env, plan)
	require.NoError(t, err)
	require.FileExists(t, flag)
	require.Contains(t, applied.Detail, "exited 0")
	require.Contains(t, applied.Detail, "drained")

	require.NoError(t, a.Rollback(testCtx(t), env, applied))
	require.NoFileExists(t, flag)
}

func TestCommandActionExitStatus(t *testing.T) {
	cases := []struct {
		name    string
		args    argspec.Values
		wantErr bool
	}{
		{"expected non-zero", argspec.Values{"cmd": "exit 3", "expect_exit": 3}, false},
		{"unexpected", argspec.Values{"cmd": "echo nope >&2; exit 2"}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := localEnv(tc.args)
			plan, err := CommandAction{}.Plan(testCtx(t), env)
			require.NoError(t, err)
			applied, err := CommandAction{}.Apply(testCtx(t), env, plan)
			require.True(t, applied.Changed, "the command ran")
			if !tc.wantErr {
				require.NoError(t, err)
				return
			}
			var failed *CommandFailedError
			require.ErrorAs(t, err, &failed)
			require.Equal(t, 2, failed.ExitCode)
			require.Equal(t, "nope", failed.Stderr)
		})
	}
}

func TestCommandActionNotReversible(t *testing.T) {
	env := localEnv(argspec.Values{"cmd": "true"})
	plan, err := CommandAction{}.Plan(testCtx(t), env)
	require.NoError(t, err)
	require.False(t, plan.Reversible)
	applied, err := CommandAction{}.Apply(testCtx(t), env, plan)
	require.NoError(t, err)
	require.ErrorIs(t, CommandAction{}.Rollback(testCtx(t), env, applied), ErrNotReversible)
}
