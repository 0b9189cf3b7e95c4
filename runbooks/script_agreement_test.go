package runbooks_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/actions"
	"github.com/runbot/runbot/checks"
	"github.com/runbot/runbot/internal/argspec"
	"github.com/runbot/runbot/internal/shellscript"
	"github.com/runbot/runbot/internal/target"
	"github.com/runbot/runbot/remote"
)

// TestFlagCheckReadsWhatConfigEditWrote holds the flag check, config_edit
// and bash to one reading of a launch script, on scripts where the check
// and the action used to disagree: the check's in_script says what bash
// passes to the launch command, config_edit's ensure_flag is a no-op
// exactly when the check already sees the flag, and after config_edit
// adds, sets or removes the flag, the check and bash see just that.
func TestFlagCheckReadsWhatConfigEditWrote(t *testing.T) {
	cases := []struct {
		name   string
		script string
		found  bool   // the flag is passed to the launch command
		value  string // with this value
	}{
		{"semicolon", "exec p --a --flag;\n", true, ""},
		{"after and-and", "exec p --a --b && --flag\n", false, ""},
		{"piped on", "exec p --a --flag|tee log\n", true, ""},
		{"redirected", "exec p --a --flag>log 2>&1\n", true, ""},
		{"double quoted", "exec p --a \"--flag\"\n", true, ""},
		{"single quoted with value", "exec p --a '--flag=x y'\n", true, "x y"},
		{"continued", "exec p \\\n  --a \\\n  --flag \\\n  --b\n", true, ""},
		{"commented out", "exec p --a --b # --flag\n", false, ""},
		{"commented-out command", "# exec p --a --b --flag\nexec p --a --b\n", false, ""},
		{"comment ends the command", "exec p \\\n  --a \\\n  # --b \\\n  --flag\n", false, ""},
		{"value on the next line", "exec p --a --flag \\\n  7\n", true, "7"},
		{"negative value", "exec p --a --flag -1\n", true, "-1"},
		{"script arguments", "exec p --a --flag \"$@\"\n", true, ""},
		{"after cd", "cd / && exec p --a --flag\n", true, ""},
		{"other command", "q --flag\nexec p --a --b\n", false, ""},
		{"absent", "exec p --a --b\n", false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "serve.sh")
			require.NoError(t, os.WriteFile(file, []byte(c.script), 0o755))
			tgt := target.Target{Role: "decode", Host: "test-host", Runner: &remote.Local{Name: "test-host"}, LaunchScript: file}

			found, value := readFlag(t, tgt)
			require.Equal(t, c.found, found, "the check's in_script")
			require.Equal(t, c.value, value, "the check's script_value")
			found, value = bashFlag(t, file)
			require.Equal(t, c.found, found, "bash passes the flag")
			require.Equal(t, c.value, value, "the value bash passes")

			// ensure_flag is a no-op exactly when the check sees the flag.
			plan := editPlan(t, tgt, argspec.Values{"ensure_flag": []string{"--flag"}})
			require.Equal(t, c.found, plan.NoOp, "config_edit's ensure_flag --flag: %s", plan.Summary)
			apply(t, tgt, plan)
			found, _ = readFlag(t, tgt)
			require.True(t, found, "the check reads the flag config_edit added")
			found, _ = bashFlag(t, file)
			require.True(t, found, "bash passes the flag config_edit added")
			require.True(t, editPlan(t, tgt, argspec.Values{"ensure_flag": []string{"--flag"}}).NoOp)

			// A value config_edit sets is the value the check reads.
			apply(t, tgt, editPlan(t, tgt, argspec.Values{"ensure_flag": []string{"--flag 'a b'"}}))
			found, value = readFlag(t, tgt)
			require.True(t, found)
			require.Equal(t, "a b", value, "the check reads the value config_edit wrote")
			found, value = bashFlag(t, file)
			require.True(t, found)
			require.Equal(t, "a b", value, "bash passes the value config_edit wrote")
			require.True(t, editPlan(t, tgt, argspec.Values{"ensure_flag": []string{"--flag 'a b'"}}).NoOp)

			// A flag config_edit removes is gone for the check and bash.
			apply(t, tgt, editPlan(t, tgt, argspec.Values{"remove_flag": []string{"--flag"}}))
			found, _ = readFlag(t, tgt)
			require.False(t, found, "the check reads the flag config_edit removed")
			found, _ = bashFlag(t, file)
			require.False(t, found, "bash passes the flag config_edit removed")
		})
	}
}

// readFlag runs the flag check on the target's launch script.
func readFlag(t *testing.T, tgt target.Target) (bool, string) {
	t.Helper()
	res, err := checks.Flag{}.Run(t.Context(), checks.Env{Target: tgt, Args: argspec.Values{"flag": "--flag"}})
	require.NoError(t, err)
	o := res.Values.(checks.FlagOutput)
	require.True(t, o.ScriptReadable, res.Evidence)
	return o.InScript, o.ScriptValue
}

// bashFlag runs the script under bash with exec replaced by a function
// that records its arguments (and q, p stand-ins that do nothing), and
// reads the flag from what the launch command received.
func bashFlag(t *testing.T, file string) (bool, string) {
	t.Helper()
	argvFile := file + ".argv"
	require.NoError(t, os.WriteFile(argvFile, nil, 0o644))
	harness := `exec() { printf '%s\0' "$@" >> "$ARGV"; }; q() { :; }; f=$1; set --; . "$f"`
	cmd := exec.Command("bash", "-c", harness, "bash", file)
	cmd.Dir = filepath.Dir(file)
	cmd.Env = append(os.Environ(), "ARGV="+argvFile)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		require.NoError(t, err, string(out))
	}
	b, err := os.ReadFile(argvFile)
	require.NoError(t, err)
	require.NotEmpty(t, b, "the launch command did not run: %s", out)
	argv := strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
	return flipped(shellscript.LookupFlag(shellscript.Argv(argv), "--flag"))
}

func flipped(v string, ok bool) (bool, string) { return ok, v }

func editPlan(t *testing.T, tgt target.Target, args argspec.Values) actions.Plan {
	t.Helper()
	plan, err := actions.ConfigEdit{}.Plan(t.Context(), actions.Env{Target: tgt, Args: args})
	require.NoError(t, err)
	return plan
}

func apply(t *testing.T, tgt target.Target, plan actions.Plan) {
	t.Helper()
	if plan.NoOp {
		return
	}
	_, err := actions.ConfigEdit{}.Apply(t.Context(), actions.Env{Target: tgt}, plan)
	require.NoError(t, err, plan.Diff)
}
