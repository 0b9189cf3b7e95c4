//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const (
	imageName    = "localhost/runbot-e2e"
	imageVersion = "e2e"
	// imageUID is the non-root user the image runs as (deploy/image).
	imageUID = 65532
)

// podmanStore is a podman whose images and containers live in a directory
// of the test's own, so that the test neither sees nor leaves anything in
// the machine's podman storage.
type podmanStore struct {
	dir string
	// conf is a storage.conf naming dir: `make image`, which runs podman
	// without flags of the test's, finds it through CONTAINERS_STORAGE_CONF.
	conf string
}

func newPodmanStore(t *testing.T) *podmanStore {
	t.Helper()
	dir := t.TempDir()
	p := &podmanStore{dir: dir, conf: filepath.Join(dir, "storage.conf")}
	// vfs copies layers instead of mounting overlays: slower for big
	// images, but this one is a single small layer, and it works where
	// overlay does not (a test machine whose own root is an overlay).
	conf := fmt.Sprintf("[storage]\ndriver = \"vfs\"\ngraphroot = %q\nrunroot = %q\n",
		filepath.Join(dir, "root"), filepath.Join(dir, "run"))
	require.NoError(t, os.WriteFile(p.conf, []byte(conf), 0o644))
	// A container a failed step left behind holds a mount under the
	// runroot, which would stop t.TempDir's removal; only this store's
	// containers are removed.
	t.Cleanup(func() {
		if out, err := p.cmd(context.Background(), "rm", "--force", "--all").CombinedOutput(); err != nil {
			t.Logf("podman rm --all in the test's store: %v: %s", err, out)
		}
	})
	return p
}

func (p *podmanStore) env() []string {
	return append(os.Environ(), "CONTAINERS_STORAGE_CONF="+p.conf)
}

// cmd is podman with args, on this store. The storage flags repeat what
// the storage.conf says so that no podman of the test's ever falls back to
// the machine's storage. runc runs the containers: Debian's podman defaults
// to crun, which refuses a host with cgroups in hybrid mode (see
// deploy/image/deps.sh).
func (p *podmanStore) cmd(ctx context.Context, args ...string) *exec.Cmd {
	global := []string{"--runtime", "runc", "--storage-driver", "vfs",
		"--root", filepath.Join(p.dir, "root"), "--runroot", filepath.Join(p.dir, "run")}
	c := exec.CommandContext(ctx, "podman", append(global, args...)...)
	c.Env = p.env()
	return c
}

// runArgs are the flags of every container the test starts. --pull=never:
// the image under test is local, and a missing one must fail, not be
// fetched. The host's network: runbot listens on a loopback port the test
// picked, and no container network (CNI, netavark, iptables) is needed.
// Limits below the host's: podman's default asks for more open files and
// processes than a sandbox without CAP_SYS_RESOURCE may grant, and the
// runtime fails the start.
func runArgs() []string {
	return []string{"run", "--pull=never", "--network=host",
		"--ulimit", "nofile=4096:4096", "--ulimit", "nproc=4096:4096"}
}

// TestImage builds the container image with `make image` (FROM scratch,
// offline) into a podman store of its own and runs it: `runbot version`,
// `runbot serve --check` against a mounted config, and the image's default
// command, `runbot serve`, with a mounted config and a mounted store
// directory, read-only otherwise, until /readyz answers 200 and it stops
// cleanly on SIGTERM. It needs root and installs podman and runc from
// Debian when they are missing (deploy/image/deps.sh --run).
func TestImage(t *testing.T) {
	require.Equal(t, 0, os.Geteuid(),
		"TestImage needs root: it installs podman and runc with apt-get when missing and runs the image with root's podman")
	deps := exec.Command("bash", "deploy/image/deps.sh", "--run")
	deps.Dir = "../.."
	out, err := deps.CombinedOutput()
	require.NoError(t, err, "deploy/image/deps.sh --run (podman, runc, ca-certificates): %s", out)

	p := newPodmanStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()

	t.Log("make image")
	start := time.Now()
	mk := exec.CommandContext(ctx, "make", "--no-print-directory", "image", "IMAGE="+imageName, "VERSION="+imageVersion)
	mk.Dir = "../.."
	mk.Env = p.env()
	out, err = mk.CombinedOutput()
	require.NoError(t, err, "make image:\n%s", out)
	t.Logf("make image took %s:\n%s", time.Since(start).Round(time.Millisecond), lastLines(string(out), 3))
	ref := imageName + ":" + imageVersion

	t.Log("the image: one architecture, the non-root user, small")
	out, err = p.cmd(ctx, "image", "inspect", "--format", "{{.Os}}/{{.Architecture}} {{.Config.User}} {{.Size}}", ref).CombinedOutput()
	require.NoError(t, err, "podman image inspect: %s", out)
	f := strings.Fields(string(out))
	require.Len(t, f, 3, "podman image inspect: %s", out)
	require.Equal(t, "linux/"+runtime.GOARCH, f[0])
	require.Equal(t, fmt.Sprintf("%d:%d", imageUID, imageUID), f[1], "the image runs as runbot, not root")
	size, err := strconv.ParseInt(f[2], 10, 64)
	require.NoError(t, err)
	t.Logf("image %s: %.1f MiB", ref, float64(size)/(1<<20))
	// The binary is most of it; a bigger image took in something else.
	require.Less(t, size, int64(64<<20), "the image should hold a static runbot and little else")

	t.Log("runbot version")
	out, err = p.cmd(ctx, append(runArgs(), "--rm", ref, "version")...).CombinedOutput()
	require.NoError(t, err, "runbot version in the image: %s", out)
	require.Contains(t, string(out), "runbot "+imageVersion+" (commit ", "the version make image was given")
	require.Contains(t, string(out), "linux/"+runtime.GOARCH)

	// The config as a deployment would mount it: a store in the mounted
	// directory, the built-in runbooks, no Slack.
	work := t.TempDir()
	port := freeLoopbackPort(t)
	cfg := filepath.Join(work, "runbot.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(fmt.Sprintf(
		"listen: 127.0.0.1:%d\nstore: /var/lib/runbot/runbot.db\nlog: {format: json, level: info}\nshutdown_grace: 10s\n", port)), 0o644))
	cfgMount := "--volume=" + cfg + ":/etc/runbot/runbot.yaml:ro"

	t.Log("runbot serve --check with a mounted config")
	out, err = p.cmd(ctx, append(runArgs(), "--rm", cfgMount, ref,
		"serve", "--check", "--config", "/etc/runbot/runbot.yaml")...).CombinedOutput()
	require.NoError(t, err, "serve --check in the image: %s", out)
	require.Contains(t, string(out), "/etc/runbot/runbot.yaml: config, inventory, runbooks and their references checked: no errors")

	// The check reads the mounted file, not some default: a broken one
	// fails it, naming the file and line.
	bad := filepath.Join(work, "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("listen: nowhere\nstore: /var/lib/runbot/runbot.db\n"), 0o644))
	out, err = p.cmd(ctx, append(runArgs(), "--rm", "--volume="+bad+":/etc/runbot/runbot.yaml:ro", ref,
		"serve", "--check", "--config", "/etc/runbot/runbot.yaml")...).CombinedOutput()
	require.Error(t, err, "serve --check must fail a broken config: %s", out)
	require.Contains(t, string(out), "/etc/runbot/runbot.yaml:1:")

	t.Log("runbot serve (the image's default command) with a mounted config and store")
	// The store directory belongs to the image's user, as docs/deploy.md
	// says to make it; the container's root file system is read-only, so
	// that the store is the only place runbot can write to.
	store := filepath.Join(work, "store")
	require.NoError(t, os.Mkdir(store, 0o700))
	require.NoError(t, os.Chown(store, imageUID, imageUID))
	name := fmt.Sprintf("runbot-e2e-%d", os.Getpid())
	out, err = p.cmd(ctx, append(runArgs(), "--detach", "--name", name, "--read-only", cfgMount,
		"--volume="+store+":/var/lib/runbot", ref)...).CombinedOutput()
	require.NoError(t, err, "podman run --detach: %s", out)
	logs := func() string {
		out, _ := p.cmd(context.Background(), "logs", name).CombinedOutput()
		return string(out)
	}

	// Polled until ready; a container that exits ends the wait at once,
	// and either failure shows runbot's log, which says why.
	url := fmt.Sprintf("http://127.0.0.1:%d/readyz", port)
	client := &http.Client{Timeout: 2 * time.Second}
	status, body := 0, ""
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		if resp, err := client.Get(url); err == nil {
			b, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			status, body = resp.StatusCode, string(b)
			if status == http.StatusOK {
				break
			}
		}
		if running, _ := p.cmd(ctx, "inspect", "--format", "{{.State.Running}}", name).CombinedOutput(); strings.TrimSpace(string(running)) != "true" {
			require.FailNowf(t, "runbot's container stopped before it was ready", "its log:\n%s", logs())
		}
		if time.Now().After(deadline) {
			require.FailNowf(t, "GET "+url+" never answered 200", "last: %d %q; runbot's log:\n%s", status, body, logs())
		}
	}
	t.Logf("GET /readyz: %d %s", status, strings.TrimSpace(body))

	db, err := os.Stat(filepath.Join(store, "runbot.db"))
	require.NoError(t, err, "the SQLite store in the mounted directory")
	st, ok := db.Sys().(*syscall.Stat_t)
	require.True(t, ok)
	require.Equal(t, uint32(imageUID), st.Uid, "the store is written by the image's user")

	t.Log("podman stop: SIGTERM, a clean shutdown")
	out, err = p.cmd(ctx, "stop", "--time", "20", name).CombinedOutput()
	require.NoError(t, err, "podman stop: %s", out)
	out, err = p.cmd(ctx, "inspect", "--format", "{{.State.ExitCode}}", name).CombinedOutput()
	require.NoError(t, err, "podman inspect: %s", out)
	require.Equal(t, "0", strings.TrimSpace(string(out)), "runbot's exit status after SIGTERM; its log:\n%s", logs())
	require.Contains(t, logs(), "shutting down")
}

// freeLoopbackPort is a TCP port on 127.0.0.1 that nothing listened on a
// moment ago.
func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	return port
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
