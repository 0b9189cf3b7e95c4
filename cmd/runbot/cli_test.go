package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBadInputIsOneClearLine: bad input to `runbot run` exits 1 with one
// line naming the problem, never a panic or a stack trace.
func TestBadInputIsOneClearLine(t *testing.T) {
	runbot, _ := buildBinaries(t)
	store := t.TempDir() + "/runbot.db"
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"unknown runbook", []string{"run", "sglang-pd-wegde", "-i", "testdata/local.yaml"}, `unknown runbook "sglang-pd-wegde" (did you mean "sglang-pd-wedge"?)`},
		{"missing param", []string{"run", "host-basics", "-i", "testdata/local.yaml"}, "runbook host-basics: param host: is required"},
		{"invalid param", []string{"run", "host-basics", "-i", "testdata/local.yaml", "-p", "host=here", "-p", "disk_full_pct=lots"}, `param disk_full_pct: want an integer, got "lots"`},
		{"unknown host", []string{"run", "host-basics", "-i", "testdata/local.yaml", "-p", "host=nowhere"}, `unknown host "nowhere"`},
		{"hostile param", []string{"run", "host-basics", "-i", "testdata/local.yaml", "-p", "host=here; rm -rf /"}, "want a host name"},
		{"no inventory", []string{"run", "host-basics", "-p", "host=here"}, "needs an inventory"},
		{"malformed param", []string{"run", "host-basics", "-i", "testdata/local.yaml", "-p", "host"}, `--param "host": want key=value`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(runbot, append(c.args, "--store", store)...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit)
			require.Equal(t, 1, exit.ExitCode())
			msg := strings.TrimSpace(stderr.String())
			require.Contains(t, msg, c.want)
			require.Equal(t, 1, strings.Count(msg, "\n")+1, "one line: %q", msg)
			require.NotContains(t, msg, "goroutine")
			require.Empty(t, stdout.String())
		})
	}
}

// TestLintReportsPositions runs `runbot lint` on the broken runbooks.
func TestLintReportsPositions(t *testing.T) {
	runbot, _ := buildBinaries(t)
	out, err := exec.Command(runbot, "lint", "../../runbooks/testdata/invalid/when-unknown-field.yaml").CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	require.Equal(t, 1, exit.ExitCode())
	require.Contains(t, string(out), `when-unknown-field.yaml:11:22: when: steps.chat has no field "exit_cod" (did you mean "exit_code"?)`)
	require.NotContains(t, string(out), "  11 |", "not a terminal: the file:line:col lines alone, for editors and scripts")

	// With --excerpts (the default at a terminal) each problem shows its
	// line, with a caret under the column, as go-task shows them.
	out, err = exec.Command(runbot, "lint", "--excerpts", "../../runbooks/testdata/invalid/when-unknown-field.yaml").CombinedOutput()
	require.ErrorAs(t, err, &exit)
	require.Contains(t, string(out), `when-unknown-field.yaml:11:22: when: steps.chat has no field "exit_cod" (did you mean "exit_code"?)`+"\n"+
		"    11 |     when: steps.chat.exit_cod != 0\n"+
		"       |                      ^\n")

	out, err = exec.Command(runbot, "lint").CombinedOutput()
	require.NoError(t, err, "the shipped runbooks are clean:\n%s", out)
	require.Regexp(t, `(?m)^[1-9][0-9]* runbook file\(s\) checked: no errors`, string(out), "a clean lint says what it checked")

	out, err = exec.Command(runbot, "lint", "testdata/lint-warning.yaml").CombinedOutput()
	require.NoError(t, err, "warnings alone do not fail lint:\n%s", out)
	require.Contains(t, string(out), "1 runbook file(s) checked: no errors, 1 warning(s)")
}
