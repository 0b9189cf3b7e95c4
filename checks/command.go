package checks

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/runbot/runbot/internal/argspec"
	"github.com/runbot/runbot/internal/step"
	"github.com/runbot/runbot/remote"
)

// CommandOutput is what the command check exposes to expressions.
type CommandOutput struct {
	ExitCode  int               `expr:"exit_code" json:"exit_code" doc:"the command's exit status"`
	OK        bool              `expr:"ok" json:"ok" doc:"the exit status was the expected one"`
	Stdout    string            `expr:"stdout" json:"stdout" doc:"standard output, capped"`
	Stderr    string            `expr:"stderr" json:"stderr" doc:"standard error, capped"`
	Truncated bool              `expr:"truncated" json:"truncated" doc:"output was longer than the cap"`
	Values    map[string]string `expr:"values" json:"values" doc:"named values extracted from stdout by the extract patterns; a name whose pattern did not match is absent, so read one that may be missing as get(steps.ID.values, \"NAME\") ?? \"DEFAULT\" (values[\"NAME\"] gives \"\", which ?? does not replace)"`
}

var commandType = Type{
	Spec: argspec.Spec{
		Name: "command",
		Doc:  "Runs a shell command on the target and captures its exit status, output and values extracted from it.",
		Args: []argspec.Arg{
			{Name: "cmd", Type: argspec.Shell, Required: true, Doc: "command line; template values are shell-quoted automatically"},
			{Name: "expect_exit", Type: argspec.Int, Default: 0, Doc: "exit status that counts as ok"},
			{Name: "extract", Type: argspec.RegexMap, Doc: "name -> regular expression; the first capture group (or the whole match) of the first match in stdout becomes values.NAME"},
			{Name: "max_output", Type: argspec.Int, Default: 64 << 10, Doc: "bytes of stdout and of stderr kept"},
		},
		Outputs: reflect.TypeFor[CommandOutput](),
	},
	Check:   Command{},
	Timeout: 30 * time.Second,
}

// Command is the generic command check.
type Command struct{}

// Plan implements Check.
func (Command) Plan(env Env) []string {
	host := env.Target.Host
	if env.Target.Runner != nil {
		host = env.Target.Runner.Host()
	}
	return []string{fmt.Sprintf("run on %s: %s", host, env.Args.String("cmd"))}
}

// Run implements Check.
func (Command) Run(ctx context.Context, env Env) (step.Result, error) {
	line := env.Args.String("cmd")
	out, err := env.Target.Runner.Run(ctx, remote.Command{Line: line, MaxOutput: env.Args.Int("max_output")})
	if err != nil {
		return step.Result{}, err
	}
	o := CommandOutput{
		ExitCode:  out.ExitCode,
		OK:        out.ExitCode == env.Args.Int("expect_exit"),
		Stdout:    string(out.Stdout),
		Stderr:    string(out.Stderr),
		Truncated: out.StdoutTruncated || out.StderrTruncated,
		Values:    map[string]string{},
	}
	ev := []string{fmt.Sprintf("`%s` exited %d after %s", commandGist(line), out.ExitCode, out.Duration.Round(time.Millisecond))}
	extract := env.Args.Map("extract")
	// Sorted, so that the evidence reads the same on every run.
	for _, name := range slices.Sorted(maps.Keys(extract)) {
		pat := extract[name]
		re := regexp.MustCompile(pat) // compiled once at load time already; cannot fail here
		if m := re.FindStringSubmatch(o.Stdout); m != nil {
			v := m[0]
			if len(m) > 1 {
				v = m[1]
			}
			o.Values[name] = v
			ev = append(ev, fmt.Sprintf("%s = %s", name, v))
		} else {
			ev = append(ev, fmt.Sprintf("%s: no match for %s", name, pat))
		}
	}
	if !o.OK && len(o.Stderr) > 0 {
		ev = append(ev, "stderr: "+firstLines(o.Stderr, 5))
	}
	return step.Result{Values: o, Evidence: ev}, nil
}

// commandGist is how evidence names a command: a one-line command as it
// is, a script by its first line and how many more it has. The whole
// script is in the plan, `runbot explain` and the recording; repeated under
// every finding that cites the step, it would bury the values that matter.
func commandGist(line string) string {
	lines := strings.Split(strings.TrimSpace(line), "\n")
	if len(lines) == 1 {
		return lines[0]
	}
	return fmt.Sprintf("%s … (+%d lines)", strings.TrimSpace(lines[0]), len(lines)-1)
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(strings.TrimSpace(s), "\n", n+1)
	if len(lines) > n {
		lines = append(lines[:n], "…")
	}
	return strings.Join(lines, " | ")
}
