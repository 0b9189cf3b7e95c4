package actions

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/argspec"
	"github.com/runbot/runbot/remote"
)

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// fileState is what a person would check about a file: its bytes, its mode
// and its owner.
type fileState struct {
	content  string
	mode     os.FileMode
	uid, gid uint32
}

func stateOf(t *testing.T, path string) fileState {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	fi, err := os.Lstat(path)
	require.NoError(t, err)
	st := fi.Sys().(*syscall.Stat_t)
	return fileState{content: string(b), mode: fi.Mode(), uid: st.Uid, gid: st.Gid}
}

// chownIfRoot gives the file a distinct owner when the test runs as root,
// so that "owner preserved" is really tested: a plain rename of a new file
// would leave it owned by root.
func chownIfRoot(t *testing.T, path string) {
	t.Helper()
	if os.Geteuid() == 0 {
		require.NoError(t, os.Chown(path, 1234, 2345))
	}
}

func TestConfigEditPlanApplyRollback(t *testing.T) {
	ctx := testCtx(t)
	dir := t.TempDir()
	script := copyFixture(t, "sglang/serve_dsv4_decode.sh", dir, "serve_dsv4_decode.sh", 0o750)
	chownIfRoot(t, script)
	before := stateOf(t, script)

	env := localEnv(argspec.Values{"ensure_flag": []string{"--disable-overlap-schedule"}})
	env.Target.LaunchScript = script
	var a ConfigEdit

	plan, err := a.Plan(ctx, env)
	require.NoError(t, err)
	require.Equal(t, before, stateOf(t, script), "planning must not touch the file")
	require.False(t, plan.NoOp)
	require.True(t, plan.Reversible)
	require.Contains(t, plan.Summary, "add --disable-overlap-schedule")
	require.Contains(t, plan.Diff, "--- "+script+"\n+++ "+script+"\n")
	require.Contains(t, plan.Diff, "\n+  --disable-overlap-schedule \\\n   --log-level info\n")
	require.Contains(t, plan.Fingerprint, "mode:750")
	require.Len(t, plan.Commands, 2)
	require.True(t, strings.HasPrefix(plan.Commands[1], "# standard input: the planned content"), plan.Commands[1])
	require.Contains(t, plan.Commands[1], "mv -f -- \"$t\" \"$f\"")

	applied, err := a.Apply(ctx, env, plan)
	require.NoError(t, err)
	require.True(t, applied.Changed)
	after := stateOf(t, script)
	require.Equal(t, before.mode, after.mode)
	require.Equal(t, [2]uint32{before.uid, before.gid}, [2]uint32{after.uid, after.gid})
	require.Contains(t, after.content, "  --enable-metrics \\\n  --disable-overlap-schedule \\\n  --log-level info\n")

	// The backup sits beside the file and holds the original, with its mode.
	backup := applied.Data["backup"]
	require.Equal(t, dir, filepath.Dir(backup))
	require.True(t, strings.HasPrefix(filepath.Base(backup), "serve_dsv4_decode.sh.runbot-bak.2026"), backup)
	require.Equal(t, before, stateOf(t, backup))
	tmps, err := filepath.Glob(filepath.Join(dir, ".runbot-*"))
	require.NoError(t, err)
	require.Empty(t, tmps, "no temporary file may be left behind")

	// Planning again finds nothing to do, and applying that is harmless.
	again, err := a.Plan(ctx, env)
	require.NoError(t, err)
	require.True(t, again.NoOp, again.Diff)
	require.Empty(t, again.Diff)
	noop, err := a.Apply(ctx, env, again)
	require.NoError(t, err)
	require.False(t, noop.Changed)
	require.NoError(t, a.Rollback(ctx, env, noop))
	require.Equal(t, after, stateOf(t, script))

	require.NoError(t, a.Rollback(ctx, env, applied))
	require.Equal(t, before, stateOf(t, script), "rollback restores the file byte for byte, with mode and owner")
}

func TestConfigEditRefusesStalePlan(t *testing.T) {
	cases := map[string]func(t *testing.T, path string){
		"content changed": func(t *testing.T, path string) {
			t.Helper()
			f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			require.NoError(t, err)
			_, err = f.WriteString("# edited by hand\n")
			require.NoError(t, err)
			require.NoError(t, f.Close())
		},
		"mode changed": func(t *testing.T, path string) {
			t.Helper()
			require.NoError(t, os.Chmod(path, 0o700))
		},
	}
	for name, change := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := testCtx(t)
			dir := t.TempDir()
			script := copyFixture(t, "sglang/serve_dsv4_prefill.sh", dir, "serve.sh", 0o755)
			env := localEnv(argspec.Values{"file": script, "ensure_flag": []string{"--disable-overlap-schedule"}})
			plan, err := ConfigEdit{}.Plan(ctx, env)
			require.NoError(t, err)

			change(t, script)
			changed := stateOf(t, script)
			_, err = ConfigEdit{}.Apply(ctx, env, plan)
			require.ErrorIs(t, err, ErrPlanStale)
			require.Equal(t, changed, stateOf(t, script), "a refused apply leaves the file alone")
			backups, _ := filepath.Glob(script + ".runbot-bak.*")
			require.Empty(t, backups)
		})
	}
}

func TestConfigEditRollbackRefusesLaterChange(t *testing.T) {
	ctx := testCtx(t)
	script := copyFixture(t, "sglang/serve_dsv4_decode.sh", t.TempDir(), "serve.sh", 0o755)
	original := stateOf(t, script)
	env := localEnv(argspec.Values{"file": script, "remove_flag": []string{"--enable-dp-attention"}})
	plan, err := ConfigEdit{}.Plan(ctx, env)
	require.NoError(t, err)
	applied, err := ConfigEdit{}.Apply(ctx, env, plan)
	require.NoError(t, err)

	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\necho someone else's fix\n"), 0o755))
	handEdited := stateOf(t, script)
	err = ConfigEdit{}.Rollback(ctx, env, applied)
	require.ErrorIs(t, err, ErrChangedSinceApply)
	require.Equal(t, handEdited, stateOf(t, script))

	env.Args["force_rollback"] = true
	require.NoError(t, ConfigEdit{}.Rollback(ctx, env, applied))
	require.Equal(t, original, stateOf(t, script))
}

// TestConfigEditHostileFileName edits a file whose directory and name hold
// spaces, quotes, globs and command substitutions; a shell that evaluated
// any of them would create a "pwned" file.
func TestConfigEditHostileFileName(t *testing.T) {
	ctx := testCtx(t)
	root := t.TempDir()
	canary := filepath.Join(root, "pwned")
	dir := filepath.Join(root, "it's a \"dir\" $(touch "+canary+")")
	script := copyFixture(t, "sglang/serve_dsv4_prefill.sh", dir, "-serve `touch pwned` $HOME *.sh", 0o755)
	chownIfRoot(t, script)
	original := stateOf(t, script)

	env := localEnv(argspec.Values{"file": script, "ensure_flag": []string{"--disable-overlap-schedule"}})
	plan, err := ConfigEdit{}.Plan(ctx, env)
	require.NoError(t, err)
	require.Equal(t, script, plan.Data["file"])
	applied, err := ConfigEdit{}.Apply(ctx, env, plan)
	require.NoError(t, err)
	require.Contains(t, stateOf(t, script).content, "--disable-overlap-schedule")
	require.Equal(t, original, stateOf(t, applied.Data["backup"]))
	require.NoError(t, ConfigEdit{}.Rollback(ctx, env, applied))
	require.Equal(t, original, stateOf(t, script))

	require.NoFileExists(t, canary)
	require.NoFileExists(t, "pwned") // the local runner's working directory
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 2, "only the script and its backup")
}

func TestConfigEditFollowsSymlink(t *testing.T) {
	ctx := testCtx(t)
	dir := t.TempDir()
	real := copyFixture(t, "sglang/serve_dsv4_decode.sh", filepath.Join(dir, "scripts"), "serve.sh", 0o755)
	link := filepath.Join(dir, "serve_dsv4_decode.sh")
	require.NoError(t, os.Symlink(real, link))

	env := localEnv(argspec.Values{"file": link, "ensure_flag": []string{"--disable-overlap-schedule"}})
	plan, err := ConfigEdit{}.Plan(ctx, env)
	require.NoError(t, err)
	require.Equal(t, real, plan.Data["file"])
	_, err = ConfigEdit{}.Apply(ctx, env, plan)
	require.NoError(t, err)
	fi, err := os.Lstat(link)
	require.NoError(t, err)
	require.Equal(t, os.ModeSymlink, fi.Mode()&os.ModeSymlink, "the link stays a link")
	require.Contains(t, stateOf(t, real).content, "--disable-overlap-schedule")
}

func TestConfigEditPlanErrors(t *testing.T) {
	ctx := testCtx(t)
	dir := t.TempDir()
	cases := []struct {
		name string
		args argspec.Values
		want string
	}{
		{"missing file", argspec.Values{"file": filepath.Join(dir, "nope.sh"), "ensure_flag": []string{"--x"}}, "does not exist"},
		{"directory", argspec.Values{"file": dir, "ensure_flag": []string{"--x"}}, "not a regular file"},
		{"no file at all", argspec.Values{"ensure_flag": []string{"--x"}}, "no file given"},
		{"newline in name", argspec.Values{"file": dir + "/a\nb", "ensure_flag": []string{"--x"}}, "newline"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ConfigEdit{}.Plan(ctx, localEnv(tc.args))
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// TestWriteAndRestoreGuards runs the write and restore commands directly,
// as a race would meet them: a file that changed between Apply's check and
// its write, and a backup that no longer holds the original.
func TestWriteAndRestoreGuards(t *testing.T) {
	ctx := testCtx(t)
	r := localEnv(nil).Target.Runner
	script := copyFixture(t, "sglang/serve_dsv4_prefill.sh", t.TempDir(), "serve.sh", 0o755)
	before := stateOf(t, script)

	out, err := r.Run(ctx, remote.Command{Line: writeFileCommand(script, script+".bak", sha256Hex([]byte("other"))), Stdin: []byte("new")})
	require.NoError(t, err)
	require.Equal(t, exitChanged, out.ExitCode, string(out.Stderr))
	require.Equal(t, before, stateOf(t, script))
	require.NoFileExists(t, script+".bak")

	require.NoError(t, os.WriteFile(script+".bak", []byte("not the original"), 0o644))
	sum := sha256Hex([]byte(before.content))
	out, err = r.Run(ctx, remote.Command{Line: restoreFileCommand(script, script+".bak", sha256Hex([]byte("original")), sum, false)})
	require.NoError(t, err)
	require.Equal(t, 1, out.ExitCode)
	require.Contains(t, string(out.Stderr), "no longer holds the original content")
	require.Equal(t, before, stateOf(t, script))
}
