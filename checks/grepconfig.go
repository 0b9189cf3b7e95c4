package checks

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/runbot/runbot/internal/argspec"
	"github.com/runbot/runbot/internal/shell"
	"github.com/runbot/runbot/internal/shellscript"
	"github.com/runbot/runbot/internal/step"
	"github.com/runbot/runbot/remote"
)

// GrepConfigOutput is what the grep_config check exposes to expressions.
type GrepConfigOutput struct {
	Values     map[string]string        `expr:"values" json:"values" doc:"name -> the value in effect: the last match, as the shell and argparse let a later setting win; empty when not found"`
	Found      map[string]bool          `expr:"found" json:"found" doc:"name -> some line matched (every extract name is present)"`
	Locations  map[string]string        `expr:"locations" json:"locations" doc:"name -> file:line of the value in effect"`
	Matches    map[string][]ConfigMatch `expr:"matches" json:"matches" doc:"name -> every match, in reading order (unit files first, then files)"`
	Files      []string                 `expr:"files" json:"files" doc:"files that were read"`
	Unreadable map[string]string        `expr:"unreadable" json:"unreadable" doc:"file (or unit) -> why it could not be read"`
}

// ConfigMatch is one line that matched an extract pattern.
type ConfigMatch struct {
	File  string `expr:"file" json:"file" doc:"file the line is in"`
	Line  int    `expr:"line" json:"line" doc:"line number of the matched text"`
	Value string `expr:"value" json:"value" doc:"the first capture group, or the whole match"`
}

// Where is file:line.
func (m ConfigMatch) Where() string { return fmt.Sprintf("%s:%d", m.File, m.Line) }

var grepConfigType = Type{
	Spec: argspec.Spec{
		Name: "grep_config",
		Doc: "Reads launch scripts (and optionally the unit's files) on the target and extracts named values, " +
			"with file:line for each. Continued lines are joined and comments ignored, so a commented-out " +
			"setting is not reported as set.",
		Args: []argspec.Arg{
			{Name: "extract", Type: argspec.RegexMap, Required: true, Doc: "name -> regular expression; the first capture group (or the whole match) becomes values.NAME, e.g. transfer_backend: `--disaggregation-transfer-backend[= ](\\S+)`"},
			{Name: "files", Type: argspec.StringList, Doc: "files to read; defaults to the target's launch script"},
			{Name: "unit_files", Type: argspec.Bool, Default: false, Doc: "also read the unit's files and drop-ins with `systemctl cat` (their Environment= and ExecStart= lines)"},
			{Name: "unit", Type: argspec.String, Doc: "unit for unit_files; defaults to the target's unit"},
		},
		Outputs: reflect.TypeFor[GrepConfigOutput](),
	},
	Check:   GrepConfig{},
	Timeout: 30 * time.Second,
}

// GrepConfig is the grep_config check.
type GrepConfig struct{}

type configSource struct {
	name string // file path or "unit NAME"
	line string
	unit bool
}

func grepConfigSources(env Env, args argspec.Values) ([]configSource, error) {
	var srcs []configSource
	if args.Bool("unit_files") {
		unit := args.String("unit")
		if unit == "" {
			unit = env.Target.Unit
		}
		if unit == "" {
			return nil, fmt.Errorf("read unit files of %s: the target has no unit in the inventory and the step sets none", env.Target.Name())
		}
		srcs = append(srcs, configSource{name: "unit " + unit, line: shell.Join("systemctl", "cat", "--no-pager", "--", unit), unit: true})
	}
	files := args.List("files")
	if len(files) == 0 && env.Target.LaunchScript != "" {
		files = []string{env.Target.LaunchScript}
	}
	for _, f := range files {
		srcs = append(srcs, configSource{name: f, line: remote.FileRead{Path: f}.ReadLine()})
	}
	if len(srcs) == 0 {
		return nil, fmt.Errorf("grep config of %s: the target has no launch script in the inventory and the step sets no files", env.Target.Name())
	}
	return srcs, nil
}

// Plan implements Check.
func (GrepConfig) Plan(env Env) []string {
	args := grepConfigType.Spec.WithDefaults(env.Args)
	srcs, err := grepConfigSources(env, args)
	if err != nil {
		return []string{"grep_config: " + err.Error()}
	}
	var plan []string
	for _, s := range srcs {
		if s.unit {
			plan = append(plan, fmt.Sprintf("run on %s: %s", hostName(env), s.line))
		} else {
			plan = append(plan, fmt.Sprintf("read %s on %s", s.name, hostName(env)))
		}
	}
	return append(plan, "extract "+strings.Join(slices.Sorted(maps.Keys(args.Map("extract"))), ", "))
}

// Run implements Check.
func (GrepConfig) Run(ctx context.Context, env Env) (step.Result, error) {
	args := grepConfigType.Spec.WithDefaults(env.Args)
	srcs, err := grepConfigSources(env, args)
	if err != nil {
		return step.Result{}, err
	}
	if env.Target.Runner == nil {
		return step.Result{}, fmt.Errorf("grep config of %s: no connection to the host", env.Target.Name())
	}
	o := GrepConfigOutput{
		Values: map[string]string{}, Found: map[string]bool{}, Locations: map[string]string{},
		Matches: map[string][]ConfigMatch{}, Files: []string{}, Unreadable: map[string]string{},
	}
	var lines []shellscript.LogicalLine
	for _, s := range srcs {
		if !s.unit {
			f, err := remote.ReadFile(ctx, env.Target.Runner, remote.FileRead{Path: s.name})
			var fe *remote.FileError
			switch {
			case errors.As(err, &fe):
				o.Unreadable[s.name] = fe.Reason
				continue
			case err != nil:
				return step.Result{}, fmt.Errorf("grep config of %s: %w", env.Target.Name(), err)
			}
			o.Files = append(o.Files, s.name)
			lines = append(lines, shellscript.LogicalLines(s.name, string(f.Data))...)
			continue
		}
		out, err := env.Target.Runner.Run(ctx, remote.Command{Line: s.line})
		if err != nil {
			return step.Result{}, fmt.Errorf("read %s on %s: %w", s.name, env.Target.Runner.Host(), err)
		}
		if out.ExitCode != 0 {
			o.Unreadable[s.name] = firstLines(string(out.Stderr)+string(out.Stdout), 2)
			continue
		}
		ls := shellscript.UnitFileLines(string(out.Stdout))
		lines = append(lines, ls...)
		for _, l := range ls {
			if !slices.Contains(o.Files, l.File) {
				o.Files = append(o.Files, l.File)
			}
		}
	}
	extract := args.Map("extract")
	names := slices.Sorted(maps.Keys(extract))
	for _, name := range names {
		re := regexp.MustCompile(extract[name]) // validated when the runbook was loaded
		o.Found[name] = false
		for _, l := range lines {
			for _, m := range re.FindAllStringSubmatchIndex(l.Text, -1) {
				from, to := m[0], m[1]
				if len(m) > 2 && m[2] >= 0 {
					from, to = m[2], m[3]
				}
				cm := ConfigMatch{File: l.File, Line: l.LineAt(from), Value: l.Text[from:to]}
				v := cm.Value
				o.Matches[name] = append(o.Matches[name], cm)
				o.Values[name], o.Locations[name], o.Found[name] = v, cm.Where(), true
			}
		}
	}
	return step.Result{Values: o, Evidence: grepConfigEvidence(o, names, srcs)}, nil
}

func grepConfigEvidence(o GrepConfigOutput, names []string, srcs []configSource) []string {
	var ev []string
	for _, s := range srcs {
		if why, bad := o.Unreadable[s.name]; bad {
			ev = append(ev, fmt.Sprintf("could not read %s: %s", s.name, why))
		}
	}
	read := make([]string, 0, len(srcs))
	for _, s := range srcs {
		if _, bad := o.Unreadable[s.name]; !bad {
			read = append(read, s.name)
		}
	}
	for _, name := range names {
		ms := o.Matches[name]
		if len(ms) == 0 {
			ev = append(ev, fmt.Sprintf("%s: not set in %s", name, orNothing(read)))
			continue
		}
		line := fmt.Sprintf("%s = %s (%s)", name, o.Values[name], o.Locations[name])
		var others []string
		for _, m := range ms[:len(ms)-1] {
			if m.Value != o.Values[name] {
				others = append(others, fmt.Sprintf("%s at %s", m.Value, m.Where()))
			}
		}
		if len(others) > 0 {
			line += "; overrides " + strings.Join(others, ", ")
		}
		ev = append(ev, line)
	}
	return ev
}

func orNothing(names []string) string {
	if len(names) == 0 {
		return "anything (nothing could be read)"
	}
	return strings.Join(names, ", ")
}
