package actions

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/runbot/runbot/internal/argspec"
	"github.com/runbot/runbot/remote"
)

// commandOutputCap bounds the output an action command keeps for its
// record.
const commandOutputCap = 64 << 10

// CommandFailedError says an action's command exited with a status other
// than the expected one.
type CommandFailedError struct {
	Host     string
	Command  string
	ExitCode int
	Want     int
	// Stderr is the start of the command's standard error.
	Stderr string
}

func (e *CommandFailedError) Error() string {
	msg := fmt.Sprintf("command on %s exited %d, want %d: %s", e.Host, e.ExitCode, e.Want, e.Command)
	if e.Stderr != "" {
		msg += ": " + e.Stderr
	}
	return msg
}

var commandActionType = Type{
	Spec: argspec.Spec{
		Name: "command",
		Doc:  "Runs a shell command on the target as a remediation; with rollback_cmd it can be undone.",
		Args: []argspec.Arg{
			{Name: "cmd", Type: argspec.Shell, Required: true, Doc: "command line; template values are shell-quoted automatically"},
			{Name: "rollback_cmd", Type: argspec.Shell, Doc: "command line that undoes cmd; without it the action is not reversible"},
			{Name: "expect_exit", Type: argspec.Int, Default: 0, Doc: "exit status of cmd that counts as success (rollback_cmd must exit 0)"},
		},
	},
	Action:  CommandAction{},
	Timeout: 5 * time.Minute,
}

// CommandAction runs a runbook-given command. The plan fixes the exact
// command lines, so Apply and Rollback run what was approved even if the
// runbook changes in between.
type CommandAction struct{}

// Plan implements Action.
func (CommandAction) Plan(_ context.Context, env Env) (Plan, error) {
	args := commandActionType.Spec.WithDefaults(env.Args)
	cmd, undo := args.String("cmd"), args.String("rollback_cmd")
	if strings.TrimSpace(cmd) == "" {
		return Plan{}, fmt.Errorf("plan command on %s: cmd is empty", env.Target.Name())
	}
	expect := strconv.Itoa(args.Int("expect_exit"))
	p := Plan{
		Action:      commandActionType.Spec.Name,
		Target:      env.Target.Name(),
		Summary:     fmt.Sprintf("run on %s: %s", env.Target.Name(), cmd),
		Commands:    []string{cmd},
		Reversible:  undo != "",
		Fingerprint: fingerprint("command", env.Target.Host, cmd, undo, expect),
		Data:        map[string]string{"cmd": cmd, "expect_exit": expect},
	}
	if undo != "" {
		p.Data["rollback_cmd"] = undo
		p.Summary += "; undone by: " + undo
	}
	return p, nil
}

// Apply implements Action.
func (CommandAction) Apply(ctx context.Context, env Env, plan Plan) (Applied, error) {
	want, err := strconv.Atoi(plan.Data["expect_exit"])
	if err != nil || plan.Data["cmd"] == "" {
		return Applied{}, fmt.Errorf("apply command on %s: the plan has no command or expected exit status", env.Target.Name())
	}
	out, err := runChecked(ctx, env.Target.Runner, plan.Data["cmd"], want)
	var failed *CommandFailedError
	if err != nil && !errors.As(err, &failed) {
		return Applied{Plan: plan}, err
	}
	// A command that ran may have changed things even when its exit status
	// was not the expected one, so it counts as changed and can be rolled
	// back.
	applied := Applied{
		Plan:    plan,
		Changed: true,
		Detail:  fmt.Sprintf("exited %d after %s", out.ExitCode, round(out.Duration)),
		Data:    map[string]string{"exit_code": strconv.Itoa(out.ExitCode), "stdout": string(out.Stdout)},
	}
	if s := strings.TrimSpace(string(out.Stdout)); s != "" {
		applied.Detail += ": " + firstLine(s)
	}
	return applied, err
}

// Rollback implements Action.
func (CommandAction) Rollback(ctx context.Context, env Env, applied Applied) error {
	undo := applied.Plan.Data["rollback_cmd"]
	if undo == "" {
		return ErrNotReversible
	}
	if !applied.Changed {
		return nil
	}
	_, err := runChecked(ctx, env.Target.Runner, undo, 0)
	return err
}

func runChecked(ctx context.Context, r remote.Runner, line string, want int) (remote.Output, error) {
	out, err := r.Run(ctx, remote.Command{Line: line, MaxOutput: commandOutputCap})
	if err != nil {
		return out, fmt.Errorf("run on %s: %w", r.Host(), err)
	}
	if out.ExitCode != want {
		return out, &CommandFailedError{Host: r.Host(), Command: line, ExitCode: out.ExitCode, Want: want, Stderr: firstLine(strings.TrimSpace(string(out.Stderr)))}
	}
	return out, nil
}

func firstLine(s string) string {
	line, _, more := strings.Cut(s, "\n")
	if more {
		line += " …"
	}
	return line
}
