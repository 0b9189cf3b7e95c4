package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// fakeAptGet stands in for apt-get: it logs each call on stderr (which the
// script leaves alone) and into the log file, and "installs" a package by
// putting its commands into its own directory, which is all of PATH.
const fakeAptGet = `#!/bin/sh
echo "apt-get $*" >&2
echo "$*" >> "$FAKE_APT_LOG"
[ "$1" = update ] && exit 0
for p in "$@"; do
	case "$p" in
	openssh-server) cmds=sshd ;;
	openssh-client) cmds="ssh ssh-keygen" ;;
	procps) cmds=pgrep ;;
	dbus-daemon) cmds=dbus-daemon ;;
	chromium) cmds=chromium ;;
	e2fsprogs) cmds="mkfs.ext4 chattr" ;;
	*) cmds= ;;
	esac
	for c in $cmds; do
		printf '#!/bin/sh\n' > "$FAKE_BIN/$c"
		/bin/chmod +x "$FAKE_BIN/$c"
	done
done
`

// testDepsRig runs scripts/test-deps.sh with a PATH of fakes: apt-get as
// above, id answering uid, go naming a GOPATH whose Alertmanager is
// installed, and the real ls and mkdir. The programs the script looks for
// on PATH are missing until the fake apt-get puts them there.
type testDepsRig struct {
	bin, aptLog string
}

func newTestDepsRig(t *testing.T, uid string) *testDepsRig {
	t.Helper()
	dir := t.TempDir()
	r := &testDepsRig{bin: filepath.Join(dir, "bin"), aptLog: filepath.Join(dir, "apt.log")}
	gopath := filepath.Join(dir, "gopath")
	require.NoError(t, os.MkdirAll(filepath.Join(gopath, "bin"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(gopath, "bin", "alertmanager"), []byte("#!/bin/sh\n"), 0o755))
	require.NoError(t, os.MkdirAll(r.bin, 0o755))
	for name, body := range map[string]string{
		"apt-get": fakeAptGet,
		"id":      "#!/bin/sh\necho " + uid + "\n",
		"go":      "#!/bin/sh\necho " + gopath + "\n",
	} {
		require.NoError(t, os.WriteFile(filepath.Join(r.bin, name), []byte(body), 0o755))
	}
	for _, real := range []string{"ls", "mkdir"} {
		p, err := exec.LookPath(real)
		require.NoError(t, err)
		require.NoError(t, os.Symlink(p, filepath.Join(r.bin, real)))
	}
	return r
}

// run runs the script and returns its stdout, its stderr and its exit code.
func (r *testDepsRig) run(t *testing.T) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command("/bin/bash", "../../scripts/test-deps.sh")
	cmd.Env = []string{"PATH=" + r.bin, "FAKE_APT_LOG=" + r.aptLog, "FAKE_BIN=" + r.bin}
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil {
		require.ErrorAs(t, err, &exit, errOut.String())
		code = exit.ExitCode()
	}
	return out.String(), errOut.String(), code
}

// aptCalls returns apt-get's command lines so far.
func (r *testDepsRig) aptCalls(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(r.aptLog)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

// TestTestDepsInstallsWithoutRecommends: make test-deps installs the
// Debian packages the tests need without their recommends (which were
// most of the 238 packages it installed), after listing each with why it
// is needed, and run again it does nothing.
func TestTestDepsInstallsWithoutRecommends(t *testing.T) {
	r := newTestDepsRig(t, "0")
	// sshd and PostgreSQL's initdb are looked for where Debian installs
	// them as well as on PATH, so on a machine that has them they are not
	// listed; the rest are missing from the fake PATH.
	missing := []string{"openssh-client", "procps", "dbus-daemon", "chromium", "e2fsprogs"}

	stdout, stderr, code := r.run(t)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	calls := r.aptCalls(t)
	require.Len(t, calls, 2, "apt-get update, then one apt-get install")
	require.Equal(t, "update -qq", calls[0])
	args := strings.Fields(calls[1])
	require.Equal(t, []string{"install", "-y", "-qq", "--no-install-recommends"}, args[:4])
	for _, p := range missing {
		require.Equal(t, 1, strings.Count(" "+calls[1]+" ", " "+p+" "), "%s is installed once: %s", p, calls[1])
	}

	// The list comes first, one line per package with its reason.
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	require.Equal(t, "test-deps: installing "+strconv.Itoa(len(args)-4)+" Debian package(s) with apt-get, without recommends:", lines[0])
	require.Len(t, lines, len(args)-4+1, stdout)
	for i, p := range args[4:] {
		fields := strings.Fields(lines[i+1])
		require.Equal(t, []string{"test-deps:", p}, fields[:2], lines[i+1])
		require.Greater(t, len(fields), 3, "%s has a reason: %q", p, lines[i+1])
	}
	require.Contains(t, stdout, "chromium: the web report pages are tested in a real headless browser")
	require.Less(t, strings.Index(stderr, "apt-get update"), strings.Index(stderr, "apt-get install"))

	// Everything is there now: a second run installs nothing and says
	// nothing.
	stdout, stderr, code = r.run(t)
	require.Equal(t, 0, code, stderr)
	require.Empty(t, stdout)
	require.Empty(t, stderr)
	require.Len(t, r.aptCalls(t), 2, "a second run calls apt-get no more")
}

// TestTestDepsWithoutRootNamesWhatIsMissing: without root the script
// installs nothing and fails naming each missing package and why.
func TestTestDepsWithoutRootNamesWhatIsMissing(t *testing.T) {
	r := newTestDepsRig(t, "1000")
	stdout, stderr, code := r.run(t)
	require.Equal(t, 1, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	require.Empty(t, r.aptCalls(t))
	require.Contains(t, stderr, "test-deps: missing Debian packages (install them, or run make test as root):\n")
	require.Regexp(t, `(?m)^test-deps:   chromium +chromium: the web report pages`, stderr)
	require.Regexp(t, `(?m)^test-deps:   openssh-client +ssh: `, stderr)
}
