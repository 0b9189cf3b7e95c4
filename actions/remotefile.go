package actions

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"strings"

	"github.com/runbot/runbot/internal/shell"
	"github.com/runbot/runbot/remote"
)

// maxEditSize bounds the files config_edit reads: launch scripts, env files
// and drop-ins are small, and a file past this is not what a runbook meant.
const maxEditSize = 4 << 20

// exitChanged is the exit status runbot's own write and restore scripts use
// to say the file is not the one they were told to expect.
const exitChanged = 75

// remoteFile is a file on a target as config_edit saw it. Every access goes
// through shell commands on the target's runner, so it works the same over
// SSH and locally; the commands assume GNU coreutils (readlink -f, stat -c,
// chmod/chown --reference, mktemp, sha256sum).
type remoteFile struct {
	// Path is the file with symlinks resolved: edits replace the file a
	// link points to, never the link.
	Path string
	// Mode is the octal mode as stat prints it, e.g. 755.
	Mode string
	// Owner is uid:gid.
	Owner   string
	Content []byte
}

func (f remoteFile) sha256() string { return sha256Hex(f.Content) }

// fingerprint covers what Apply relies on: content, mode and owner.
func (f remoteFile) fingerprint() string {
	return fmt.Sprintf("sha256:%s mode:%s owner:%s", f.sha256(), f.Mode, f.Owner)
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// readFileCommand prints the file's mode and owner, its resolved path and
// then its content.
func readFileCommand(file string) string {
	return "f=" + shell.Quote(file) + `
p=$(readlink -f -- "$f") && [ -e "$p" ] || { echo "$f does not exist" >&2; exit 2; }
[ -f "$p" ] || { echo "$f is not a regular file" >&2; exit 2; }
stat -c '%a %u:%g' -- "$p" && printf '%s\n' "$p" && cat -- "$p"`
}

func readRemoteFile(ctx context.Context, r remote.Runner, file string) (remoteFile, error) {
	if strings.ContainsAny(file, "\n\x00") {
		return remoteFile{}, fmt.Errorf("read %q on %s: file names with a newline are not supported", file, r.Host())
	}
	out, err := r.Run(ctx, remote.Command{Line: readFileCommand(file), MaxOutput: maxEditSize + 8<<10})
	if err != nil {
		return remoteFile{}, fmt.Errorf("read %s on %s: %w", file, r.Host(), err)
	}
	if out.ExitCode != 0 {
		return remoteFile{}, fmt.Errorf("read %s on %s: exit status %d: %s", file, r.Host(), out.ExitCode, strings.TrimSpace(string(out.Stderr)))
	}
	if out.StdoutTruncated {
		return remoteFile{}, fmt.Errorf("read %s on %s: the file is larger than %d bytes, too large to edit", file, r.Host(), maxEditSize)
	}
	statLine, rest, ok1 := bytes.Cut(out.Stdout, []byte("\n"))
	resolved, content, ok2 := bytes.Cut(rest, []byte("\n"))
	mode, owner, ok3 := strings.Cut(string(statLine), " ")
	if !ok1 || !ok2 || !ok3 {
		return remoteFile{}, fmt.Errorf("read %s on %s: unexpected output %q", file, r.Host(), truncate(out.Stdout, 120))
	}
	return remoteFile{Path: string(resolved), Mode: mode, Owner: owner, Content: content}, nil
}

// writeFileCommand backs the file up beside itself and replaces it with its
// standard input, atomically: the new content goes to a temporary file in
// the same directory, takes the old file's mode and owner, and is renamed
// over it. It refuses, with exitChanged, when the file's content is not the
// one the plan was made against.
func writeFileCommand(file, backup, wantSHA string) string {
	return strings.Join([]string{
		"set -e",
		"f=" + shell.Quote(file),
		"b=" + shell.Quote(backup),
		`[ "$(sha256sum < "$f")" = ` + shell.Quote(wantSHA+"  -") + ` ] || { echo "$f changed since the plan was made" >&2; exit 75; }`,
		`[ ! -e "$b" ] && [ ! -L "$b" ] || { echo "backup $b already exists" >&2; exit 1; }`,
		`cp -p -- "$f" "$b"`,
		"t=$(mktemp " + shell.Quote(path.Dir(file)+"/.runbot-edit.XXXXXX") + ")",
		`trap 'rm -f -- "$t"' EXIT`,
		`cat > "$t"`,
		`chmod --reference="$f" -- "$t"`,
		`chown --reference="$f" -- "$t"`,
		`mv -f -- "$t" "$f"`,
		"trap - EXIT",
	}, "\n")
}

// restoreFileCommand puts the backup back in place, atomically and byte for
// byte (cp -p keeps the backup's mode, owner and times, which are the
// original's). Unless forced it refuses, with exitChanged, when the file no
// longer holds what runbot wrote.
func restoreFileCommand(file, backup, oldSHA, newSHA string, force bool) string {
	lines := []string{
		"set -e",
		"f=" + shell.Quote(file),
		"b=" + shell.Quote(backup),
	}
	if !force {
		lines = append(lines, `[ "$(sha256sum < "$f")" = `+shell.Quote(newSHA+"  -")+` ] || { echo "$f changed since runbot edited it" >&2; exit 75; }`)
	}
	return strings.Join(append(lines,
		`[ "$(sha256sum < "$b")" = `+shell.Quote(oldSHA+"  -")+` ] || { echo "backup $b no longer holds the original content" >&2; exit 1; }`,
		"t=$(mktemp "+shell.Quote(path.Dir(file)+"/.runbot-restore.XXXXXX")+")",
		`trap 'rm -f -- "$t"' EXIT`,
		`cp -p -- "$b" "$t"`,
		`mv -f -- "$t" "$f"`,
		"trap - EXIT",
	), "\n")
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
