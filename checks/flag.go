package checks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/runbot/runbot/internal/argspec"
	"github.com/runbot/runbot/internal/shellscript"
	"github.com/runbot/runbot/internal/step"
	"github.com/runbot/runbot/remote"
)

// FlagOutput is what the flag check exposes to expressions.
type FlagOutput struct {
	Flag           string    `expr:"flag" json:"flag" doc:"the flag looked for"`
	InScript       bool      `expr:"in_script" json:"in_script" doc:"the launch script passes the flag (comments ignored, continued lines joined)"`
	InProcess      bool      `expr:"in_process" json:"in_process" doc:"the running process's command line has the flag"`
	Drift          bool      `expr:"drift" json:"drift" doc:"script and process disagree: one has the flag and the other not, or both have it with different values; false when either could not be read"`
	ProcessKnown   bool      `expr:"process_known" json:"process_known" doc:"the unit has a main process and its command line was read"`
	ScriptReadable bool      `expr:"script_readable" json:"script_readable" doc:"the launch script could be read"`
	MainPID        int       `expr:"main_pid" json:"main_pid" doc:"the unit's main process id; 0 when it has none"`
	ScriptValue    string    `expr:"script_value" json:"script_value" doc:"the flag's value in the script (--flag=v or --flag v); empty for a switch"`
	ProcessValue   string    `expr:"process_value" json:"process_value" doc:"the flag's value in the process's command line"`
	ScriptLine     string    `expr:"script_line" json:"script_line" doc:"file:line where the script passes the flag"`
	ScriptModified time.Time `expr:"script_modified" json:"script_modified" doc:"when the script was last modified"`
	ProcessStarted time.Time `expr:"process_started" json:"process_started" doc:"when the unit last became active"`
	ScriptNewer    bool      `expr:"script_newer" json:"script_newer" doc:"the script was modified after the process started, so the process may not run what the script says"`
	Reported       string    `expr:"reported" json:"reported" doc:"the setting in effect as the running server reports it (reported_key in reported_path's JSON): true or false; empty when not asked or not answered"`
	ReportedFrom   string    `expr:"reported_from" json:"reported_from" doc:"the URL that answered reported"`
	ReportedError  string    `expr:"reported_error" json:"reported_error" doc:"why the server's report could not be read"`
}

var flagType = Type{
	Spec: argspec.Spec{
		Name: "flag",
		Doc: "Checks whether a command-line flag is set in the launch script and in the running process " +
			"(/proc/<MainPID>/cmdline), and reports drift when they differ: the script is not the process.",
		Args: []argspec.Arg{
			{Name: "flag", Type: argspec.String, Required: true, Doc: "the flag, e.g. --disable-overlap-schedule"},
			{Name: "script", Type: argspec.String, Doc: "launch script; defaults to the target's launch script"},
			{Name: "unit", Type: argspec.String, Doc: "unit whose main process to inspect; defaults to the target's unit"},
			{Name: "reported_path", Type: argspec.String, Escape: argspec.EscapeURLPath, Doc: "also ask the running server what is in effect: a JSON endpoint joined to the target's URL, e.g. /server_info (a setting can come from a config file, or be forced by the server, without the flag)"},
			{Name: "reported_fallback_path", Type: argspec.String, Escape: argspec.EscapeURLPath, Doc: "endpoint to ask instead when reported_path answers 404, e.g. /get_server_info in older SGLang builds"},
			{Name: "reported_key", Type: argspec.String, Doc: "the boolean field of the report that the flag sets, e.g. disable_overlap_schedule"},
			{Name: "reported_timeout", Type: argspec.Duration, Default: 10 * time.Second, Positive: true, Doc: "how long the server may take to report (SGLang's /server_info asks the scheduler, which a blocked loop never answers)"},
		},
		Outputs: reflect.TypeFor[FlagOutput](),
	},
	Check:   Flag{},
	Timeout: 30 * time.Second,
}

// Flag is the flag check.
type Flag struct{}

func flagArgs(env Env) (args argspec.Values, script, unit string, err error) {
	args = flagType.Spec.WithDefaults(env.Args)
	script, unit = args.String("script"), args.String("unit")
	if script == "" {
		script = env.Target.LaunchScript
	}
	if unit == "" {
		unit = env.Target.Unit
	}
	switch {
	case args.String("flag") == "":
		err = fmt.Errorf("check flag on %s: no flag given", env.Target.Name())
	case script == "" && unit == "":
		err = fmt.Errorf("check flag %s on %s: the target has neither a launch script nor a unit in the inventory", args.String("flag"), env.Target.Name())
	}
	return args, script, unit, err
}

// Plan implements Check.
func (Flag) Plan(env Env) []string {
	args, script, unit, err := flagArgs(env)
	if err != nil {
		return []string{"flag: " + err.Error()}
	}
	var plan []string
	if script != "" {
		plan = append(plan, fmt.Sprintf("read %s on %s", script, hostName(env)))
	}
	if unit != "" {
		plan = append(plan, fmt.Sprintf("read the main PID of %s, then /proc/<pid>/cmdline on %s", unit, hostName(env)))
	}
	plan = append(plan, "look for "+args.String("flag")+" in both")
	if path, key := args.String("reported_path"), args.String("reported_key"); path != "" && key != "" && env.Target.URL != "" {
		ask := fmt.Sprintf("ask GET %s%s", strings.TrimRight(env.Target.URL, "/"), path)
		if fb := args.String("reported_fallback_path"); fb != "" {
			ask += " (" + fb + " where that is 404)"
		}
		plan = append(plan, ask+" which "+key+" is in effect")
	}
	return plan
}

// Run implements Check.
func (Flag) Run(ctx context.Context, env Env) (step.Result, error) {
	args, script, unit, err := flagArgs(env)
	if err != nil {
		return step.Result{}, err
	}
	if env.Target.Runner == nil {
		return step.Result{}, fmt.Errorf("check flag on %s: no connection to the host", env.Target.Name())
	}
	o := FlagOutput{Flag: args.String("flag")}
	var ev []string
	if script != "" {
		line, err := o.readScript(ctx, env.Target.Runner, script)
		if err != nil {
			return step.Result{}, err
		}
		if line != "" {
			ev = append(ev, line)
		}
	}
	if unit != "" {
		if env.Target.Services == nil {
			return step.Result{}, fmt.Errorf("check flag on %s: no service manager for the host", env.Target.Name())
		}
		st, err := env.Target.Services.Show(ctx, unit)
		if err != nil {
			return step.Result{}, fmt.Errorf("check flag %s on %s: %w", o.Flag, env.Target.Name(), err)
		}
		o.MainPID, o.ProcessStarted = st.MainPID, st.ActiveEnter
		if o.MainPID > 0 {
			line, err := o.readProcess(ctx, env.Target.Runner)
			if err != nil {
				return step.Result{}, err
			}
			if line != "" {
				ev = append(ev, line)
			}
		}
	}
	if line := o.readReported(ctx, env, args); line != "" {
		ev = append(ev, line)
	}
	o.Drift = o.ProcessKnown && o.ScriptReadable &&
		(o.InScript != o.InProcess || (o.ScriptValue != "" && o.ProcessValue != "" && o.ScriptValue != o.ProcessValue))
	o.ScriptNewer = o.ProcessKnown && o.ScriptReadable && !o.ProcessStarted.IsZero() && o.ScriptModified.After(o.ProcessStarted)
	ev = append([]string{flagSummary(o, script, unit)}, ev...)
	return step.Result{Values: o, Evidence: ev}, nil
}

// readScript fills the script fields. It returns an evidence line when the
// script could not be read.
func (o *FlagOutput) readScript(ctx context.Context, r remote.Runner, script string) (string, error) {
	file, err := remote.ReadFile(ctx, r, remote.FileRead{Path: script, ModTime: true})
	var fe *remote.FileError
	switch {
	case errors.As(err, &fe):
		return fmt.Sprintf("could not read %s: %s", script, fe.Reason), nil
	case err != nil:
		return "", err
	}
	body := string(file.Data)
	o.ScriptModified = file.ModTime
	o.ScriptReadable = true
	// The launch command, read as config_edit reads it to edit it. The
	// first physical line of body is the script's line 1.
	f, err := shellscript.Parse(body).LaunchFlag(nil, o.Flag)
	if err != nil {
		return fmt.Sprintf("could not find the launch command in %s: %v", script, err), nil
	}
	if f.Found {
		o.InScript, o.ScriptValue = true, f.Value
		o.ScriptLine = fmt.Sprintf("%s:%d", script, f.Line)
	}
	return "", nil
}

// shells are interpreters whose command line says nothing about the program
// a script starts when the script does not exec it.
var shells = []string{"sh", "bash", "dash", "zsh", "ksh"}

// readProcess fills the process fields from /proc/<pid>/cmdline. When the
// main process is a shell still running the script (no exec), the flag is
// looked for in its children's command lines too.
func (o *FlagOutput) readProcess(ctx context.Context, r remote.Runner) (string, error) {
	argv, ok, err := readCmdline(ctx, r, o.MainPID)
	if err != nil {
		return "", err
	}
	if !ok {
		return fmt.Sprintf("process %d exited before its command line could be read", o.MainPID), nil
	}
	o.ProcessKnown = true
	o.ProcessValue, o.InProcess = shellscript.LookupFlag(shellscript.Argv(argv), o.Flag)
	if o.InProcess || len(argv) == 0 || !slices.Contains(shells, path.Base(argv[0])) {
		return "", nil
	}
	// A shell has one thread, so its main thread's children are all of
	// them; the command, for runners that read no files, takes every
	// thread's.
	kids, err := remote.ReadFile(ctx, r, remote.FileRead{
		Path:    fmt.Sprintf("/proc/%d/task/%d/children", o.MainPID, o.MainPID),
		Command: fmt.Sprintf("cat /proc/%d/task/*/children", o.MainPID),
	})
	if err != nil && !errors.As(err, new(*remote.FileError)) {
		return "", fmt.Errorf("list children of process %d on %s: %w", o.MainPID, r.Host(), err)
	}
	for _, f := range strings.Fields(string(kids.Data)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			continue
		}
		child, ok, err := readCmdline(ctx, r, pid)
		if err != nil {
			return "", err
		}
		if v, found := shellscript.LookupFlag(shellscript.Argv(child), o.Flag); ok && found {
			o.InProcess, o.ProcessValue = true, v
			return fmt.Sprintf("main process %d is a shell (%s); the flag was found in its child %d", o.MainPID, argv[0], pid), nil
		}
	}
	return fmt.Sprintf("main process %d is a shell (%s) that did not exec the server; none of its children has the flag either", o.MainPID, argv[0]), nil
}

// readCmdline reads a process's arguments. ok is false when the process is
// gone.
func readCmdline(ctx context.Context, r remote.Runner, pid int) (argv []string, ok bool, err error) {
	path := fmt.Sprintf("/proc/%d/cmdline", pid)
	f, err := remote.ReadFile(ctx, r, remote.FileRead{Path: path, Command: fmt.Sprintf(`tr '\0' '\n' < %s`, path)})
	if errors.As(err, new(*remote.FileError)) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read command line of process %d on %s: %w", pid, r.Host(), err)
	}
	// The file ends each argument with a NUL; the command (tr) prints
	// each on a line of its own instead.
	sep := "\n"
	if bytes.IndexByte(f.Data, 0) >= 0 {
		sep = "\x00"
	}
	s := strings.TrimSuffix(string(f.Data), sep)
	if s == "" {
		return nil, true, nil // a kernel thread or a zombie: no arguments
	}
	return strings.Split(s, sep), true, nil
}

// flagSummary is the headline evidence line.
func flagSummary(o FlagOutput, script, unit string) string {
	where := func(in bool, value, loc string) string {
		if !in {
			return "absent"
		}
		s := "set"
		if value != "" {
			s += " to " + value
		}
		if loc != "" {
			s += " (" + loc + ")"
		}
		return s
	}
	var parts []string
	if script != "" {
		if o.ScriptReadable {
			parts = append(parts, "script: "+where(o.InScript, o.ScriptValue, o.ScriptLine))
		} else {
			parts = append(parts, "script: unreadable")
		}
	}
	if unit != "" {
		switch {
		case o.ProcessKnown:
			parts = append(parts, fmt.Sprintf("running process (pid %d): %s", o.MainPID, where(o.InProcess, o.ProcessValue, "")))
		case o.MainPID == 0:
			parts = append(parts, fmt.Sprintf("running process: none (%s has no main process)", unit))
		default:
			parts = append(parts, fmt.Sprintf("running process (pid %d): unreadable", o.MainPID))
		}
	}
	line := o.Flag + " — " + strings.Join(parts, "; ")
	switch {
	case o.Drift && o.InScript && o.InProcess:
		line += " — drift: script and process use different values"
	case o.Drift && o.InScript:
		line += " — drift: the script has it but the running process does not; a restart would apply it"
	case o.Drift:
		line += " — drift: the running process has it but the script does not; the next restart drops it"
	case o.ProcessKnown && o.ScriptReadable:
		line += " — consistent"
	}
	if o.ScriptNewer {
		line += fmt.Sprintf(" (script modified %s, after the process started %s)", clockText(o.ScriptModified, o.ProcessStarted), clockText(o.ProcessStarted, o.ProcessStarted))
	}
	return line
}
