package main

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReleaseBinaryIsStaticAndVersioned runs the release script (the one
// `make release` runs) for this machine's platform and checks what a
// packager would: a static binary with no ELF interpreter, a checksum
// file that verifies, and `runbot version` naming the release and commit.
// The arm64 build is the same command with another GOARCH.
func TestReleaseBinaryIsStaticAndVersioned(t *testing.T) {
	dist := t.TempDir()
	cmd := exec.Command("bash", "../../scripts/release.sh", dist)
	cmd.Env = append(os.Environ(), "VERSION=v0.0.0-test", "PLATFORMS=linux/amd64")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))

	bin := filepath.Join(dist, "runbot-v0.0.0-test-linux-amd64")
	f, err := elf.Open(bin)
	require.NoError(t, err)
	defer func() { _ = f.Close() }()
	for _, p := range f.Progs {
		require.NotEqual(t, elf.PT_INTERP, p.Type, "a static binary has no dynamic loader")
	}

	cmd = exec.Command("sha256sum", "-c", "SHA256SUMS")
	cmd.Dir = dist
	sums, err := cmd.CombinedOutput()
	require.NoError(t, err, string(sums))
	require.Contains(t, string(sums), "runbot-v0.0.0-test-linux-amd64: OK")

	v, err := exec.Command(bin, "version").Output()
	require.NoError(t, err)
	m := regexp.MustCompile(`^runbot v0\.0\.0-test \(commit ([0-9a-f]{40})(\+dirty)?, go1\.[0-9.]+, linux/amd64\)\n$`).FindStringSubmatch(string(v))
	require.NotNil(t, m, string(v))
	// The commit is one of this repository's (HEAD may have moved on while
	// the test ran, so it is not compared with HEAD).
	out, err = exec.Command("git", "cat-file", "-t", m[1]).CombinedOutput()
	require.NoError(t, err, string(out))
	require.Equal(t, "commit", strings.TrimSpace(string(out)))
}
