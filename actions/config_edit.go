package actions

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/pmezard/go-difflib/difflib"

	"github.com/runbot/runbot/internal/argspec"
	"github.com/runbot/runbot/remote"
)

// ErrChangedSinceApply means a rollback found the file changed after runbot
// edited it; restoring the backup would silently undo someone else's change.
var ErrChangedSinceApply = errors.New("file changed since runbot edited it")

var configEditType = Type{
	Spec: argspec.Spec{
		Name: "config_edit",
		Doc: "Makes a launch script, env file or drop-in contain (or not contain) flags, exports and lines, " +
			"keeping the file's style, mode and owner. The plan shows the exact diff; apply keeps a backup " +
			"beside the file (FILE.runbot-bak.TIME) and rollback restores it byte for byte.",
		Args: []argspec.Arg{
			{Name: "file", Type: argspec.String, Doc: "file to edit; default: the target's launch script"},
			{Name: "ensure_flag", Type: argspec.StringList, Doc: "flags the launch command must have, written as on a command line: --disable-overlap-schedule, --mem-fraction-static 0.8, --log-level=info; an existing flag gets the given value"},
			{Name: "remove_flag", Type: argspec.StringList, Doc: "flags the launch command must not have; their values go with them"},
			{Name: "after_flag", Type: argspec.String, Doc: "new flags go right after this flag; default: on a new line before the command's last line"},
			{Name: "command_pattern", Type: argspec.Regex, Doc: "regular expression picking the command whose flags are edited; default: the command with the most -- flags"},
			{Name: "ensure_export", Type: argspec.StringList, Doc: "KEY=VALUE: the file must have `export KEY=VALUE` (VALUE is quoted as the shell needs)"},
			{Name: "remove_export", Type: argspec.StringList, Doc: "KEY, or KEY=VALUE to remove only that value: `export KEY=...` lines to remove"},
			{Name: "ensure_line", Type: argspec.StringList, Doc: "exact lines the file must have (appended at the end when missing), for env files and drop-ins"},
			{Name: "remove_line", Type: argspec.StringList, Doc: "exact lines the file must not have"},
			{Name: "force_rollback", Type: argspec.Bool, Default: false, Doc: "roll back even when the file changed after runbot edited it; the later change is lost"},
		},
	},
	Action:  ConfigEdit{},
	Timeout: time.Minute,
}

// ConfigEdit edits a file on the target through shell commands on its
// runner.
type ConfigEdit struct{}

// Plan implements Action. It reads the file and computes the new content
// and its diff; nothing on the target changes.
func (ConfigEdit) Plan(ctx context.Context, env Env) (Plan, error) {
	args := configEditType.Spec.WithDefaults(env.Args)
	file := args.String("file")
	if file == "" {
		file = env.Target.LaunchScript
	}
	if file == "" {
		return Plan{}, fmt.Errorf("plan config_edit on %s: no file given and the target has no launch script", env.Target.Name())
	}
	edit, err := parseEdit(args)
	if err != nil {
		return Plan{}, fmt.Errorf("plan config_edit of %s on %s: %w", file, env.Target.Name(), err)
	}
	f, err := readRemoteFile(ctx, env.Target.Runner, file)
	if err != nil {
		return Plan{}, fmt.Errorf("plan config_edit: %w", err)
	}
	s := newScript(string(f.Content))
	changes, err := s.apply(edit)
	if err != nil {
		return Plan{}, fmt.Errorf("plan config_edit of %s on %s: %w", f.Path, env.Target.Name(), err)
	}
	content := []byte(s.String())
	p := Plan{
		Action:      configEditType.Spec.Name,
		Target:      env.Target.Name(),
		Reversible:  true,
		Fingerprint: f.fingerprint(),
		Data: map[string]string{
			"file":   f.Path,
			"sha256": f.sha256(),
			"mode":   f.Mode,
			"owner":  f.Owner,
		},
	}
	if bytes.Equal(content, f.Content) {
		p.NoOp = true
		p.Summary = fmt.Sprintf("%s on %s already is as wanted; nothing to change", f.Path, env.Target.Name())
		return p, nil
	}
	backup := f.Path + ".runbot-bak." + clock(env)().UTC().Format("20060102T150405.000Z")
	newSHA := sha256Hex(content)
	p.Summary = fmt.Sprintf("edit %s on %s: %s (backup %s)", f.Path, env.Target.Name(), strings.Join(changes, ", "), backup)
	p.Diff = unifiedDiff(f.Path, f.Content, content)
	p.Commands = []string{
		readFileCommand(f.Path),
		writeCommand(f.Path, backup, f.sha256(), content),
	}
	p.Data["backup"] = backup
	p.Data["new_sha256"] = newSHA
	p.Data["content"] = base64.StdEncoding.EncodeToString(content)
	return p, nil
}

// writeCommand is the command Apply runs to write content, opened by a
// shell comment that says what it reads on standard input, so the plan
// shows that too.
func writeCommand(file, backup, oldSHA string, content []byte) string {
	note := fmt.Sprintf("# standard input: the planned content (%d bytes, sha256 %s)", len(content), sha256Hex(content))
	return note + "\n" + writeFileCommand(file, backup, oldSHA)
}

// Apply implements Action. It refuses with ErrPlanStale when the file's
// content, mode or owner differ from what the plan saw.
func (ConfigEdit) Apply(ctx context.Context, env Env, plan Plan) (Applied, error) {
	file := plan.Data["file"]
	r := env.Target.Runner
	f, err := readRemoteFile(ctx, r, file)
	if err != nil {
		return Applied{}, fmt.Errorf("apply config_edit: %w", err)
	}
	if got := f.fingerprint(); got != plan.Fingerprint {
		return Applied{}, fmt.Errorf("apply config_edit to %s on %s: %w (planned against %s, now %s)", file, r.Host(), ErrPlanStale, plan.Fingerprint, got)
	}
	if plan.NoOp {
		return Applied{Plan: plan, Detail: file + " already was as wanted"}, nil
	}
	content, err := base64.StdEncoding.DecodeString(plan.Data["content"])
	if err != nil || sha256Hex(content) != plan.Data["new_sha256"] {
		return Applied{}, fmt.Errorf("apply config_edit to %s on %s: the plan's content does not match its checksum", file, r.Host())
	}
	backup := plan.Data["backup"]
	out, err := r.Run(ctx, remote.Command{Line: writeCommand(file, backup, plan.Data["sha256"], content), Stdin: content})
	if err != nil {
		return Applied{}, fmt.Errorf("write %s on %s: %w", file, r.Host(), err)
	}
	switch out.ExitCode {
	case 0:
	case exitChanged:
		return Applied{}, fmt.Errorf("write %s on %s: %w", file, r.Host(), ErrPlanStale)
	default:
		return Applied{}, fmt.Errorf("write %s on %s: exit status %d: %s", file, r.Host(), out.ExitCode, strings.TrimSpace(string(out.Stderr)))
	}
	applied := Applied{
		Plan:    plan,
		Changed: true,
		Detail:  fmt.Sprintf("wrote %s (%d bytes, mode %s, owner %s); the original is in %s", file, len(content), f.Mode, f.Owner, backup),
		Data: map[string]string{
			"file":       file,
			"backup":     backup,
			"old_sha256": plan.Data["sha256"],
			"new_sha256": plan.Data["new_sha256"],
		},
	}
	// Read back what is there now, so a write that did not stick is not
	// reported as done.
	after, err := readRemoteFile(ctx, r, file)
	if err != nil {
		return applied, fmt.Errorf("check %s after writing it: %w", file, err)
	}
	if after.sha256() != plan.Data["new_sha256"] || after.Mode != f.Mode || after.Owner != f.Owner {
		return applied, fmt.Errorf("check %s on %s after writing it: it holds %s, not the planned sha256:%s mode:%s owner:%s", file, r.Host(), after.fingerprint(), plan.Data["new_sha256"], f.Mode, f.Owner)
	}
	return applied, nil
}

// Rollback implements Action. It restores the backup Apply made, and
// refuses with ErrChangedSinceApply when the file no longer holds what Apply
// wrote, unless the force_rollback argument is set.
func (ConfigEdit) Rollback(ctx context.Context, env Env, applied Applied) error {
	if !applied.Changed {
		return nil
	}
	file, backup := applied.Data["file"], applied.Data["backup"]
	if file == "" || backup == "" {
		return fmt.Errorf("roll back config_edit on %s: the applied record names no file or backup", env.Target.Name())
	}
	r := env.Target.Runner
	force := configEditType.Spec.WithDefaults(env.Args).Bool("force_rollback")
	out, err := r.Run(ctx, remote.Command{Line: restoreFileCommand(file, backup, applied.Data["old_sha256"], applied.Data["new_sha256"], force)})
	if err != nil {
		return fmt.Errorf("restore %s on %s from %s: %w", file, r.Host(), backup, err)
	}
	switch out.ExitCode {
	case 0:
	case exitChanged:
		return fmt.Errorf("restore %s on %s from %s: %w; set force_rollback to restore anyway", file, r.Host(), backup, ErrChangedSinceApply)
	default:
		return fmt.Errorf("restore %s on %s from %s: exit status %d: %s", file, r.Host(), backup, out.ExitCode, strings.TrimSpace(string(out.Stderr)))
	}
	after, err := readRemoteFile(ctx, r, file)
	if err != nil {
		return fmt.Errorf("check %s after restoring it: %w", file, err)
	}
	if got := after.sha256(); got != applied.Data["old_sha256"] {
		return fmt.Errorf("check %s on %s after restoring it: sha256 is %s, not the original %s", file, r.Host(), got, applied.Data["old_sha256"])
	}
	return nil
}

// parseEdit turns the action's arguments into a scriptEdit.
func parseEdit(args argspec.Values) (scriptEdit, error) {
	var e scriptEdit
	for _, s := range args.List("ensure_flag") {
		f, err := parseFlagArg(s)
		if err != nil {
			return e, fmt.Errorf("ensure_flag: %w", err)
		}
		e.EnsureFlags = append(e.EnsureFlags, f)
	}
	for _, s := range args.List("remove_flag") {
		f, err := parseFlagArg(s)
		if err != nil {
			return e, fmt.Errorf("remove_flag: %w", err)
		}
		e.RemoveFlags = append(e.RemoveFlags, f.Name)
	}
	for _, s := range args.List("ensure_export") {
		a, err := parseAssignment(s, true)
		if err != nil {
			return e, fmt.Errorf("ensure_export: %w", err)
		}
		e.EnsureExports = append(e.EnsureExports, a)
	}
	for _, s := range args.List("remove_export") {
		a, err := parseAssignment(s, false)
		if err != nil {
			return e, fmt.Errorf("remove_export: %w", err)
		}
		e.RemoveExports = append(e.RemoveExports, a)
	}
	for _, name := range []string{"ensure_line", "remove_line"} {
		for i, l := range args.List(name) {
			if strings.TrimSpace(l) == "" || strings.Contains(l, "\n") {
				return e, fmt.Errorf("%s item %d: want one non-empty line", name, i+1)
			}
		}
	}
	e.EnsureLines, e.RemoveLines = args.List("ensure_line"), args.List("remove_line")
	if a := args.String("after_flag"); a != "" {
		f, err := parseFlagArg(a)
		if err != nil || f.HasValue {
			return e, fmt.Errorf("after_flag %s: want a flag name such as --port", strconv.Quote(a))
		}
		e.AfterFlag = f.Name
	}
	if p := args.String("command_pattern"); p != "" {
		re, err := regexp.Compile(p)
		if err != nil {
			return e, fmt.Errorf("command_pattern: %w", err)
		}
		e.Command = re
	}
	if len(e.EnsureFlags)+len(e.RemoveFlags)+len(e.EnsureExports)+len(e.RemoveExports)+len(e.EnsureLines)+len(e.RemoveLines) == 0 {
		return e, errors.New("nothing to do: set ensure_flag, remove_flag, ensure_export, remove_export, ensure_line or remove_line")
	}
	return e, nil
}

// unifiedDiff renders the change as a unified diff with three lines of
// context, both sides labelled with the file's path.
func unifiedDiff(file string, old, new []byte) string {
	d, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A:        diffLines(old),
		B:        diffLines(new),
		FromFile: file,
		ToFile:   file,
		Context:  3,
	})
	if err != nil {
		// difflib only fails when writing to its buffer fails, which a
		// strings.Builder never does.
		return fmt.Sprintf("(diff unavailable: %v)", err)
	}
	return d
}

// diffLines splits content into lines that keep their newline. Unlike
// difflib.SplitLines it adds no empty line after a final newline.
func diffLines(b []byte) []string {
	lines := strings.SplitAfter(string(b), "\n")
	if lines[len(lines)-1] == "" {
		return lines[:len(lines)-1]
	}
	lines[len(lines)-1] += "\n"
	return lines
}
