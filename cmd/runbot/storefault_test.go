package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/daemon"
	"github.com/runbot/runbot/store"
	"github.com/runbot/runbot/store/storetest"
)

// storeFault is a way for the store to stop taking writes in the middle
// of a run, and to come back.
type storeFault struct {
	name string
	// setup returns the store: line of serve's config, the environment it
	// needs, and how to break and mend the store.
	setup func(t *testing.T, dir string) (location string, env []string, breakIt, mend func())
}

// TestStoreFaultsMidRunLoseNothing breaks the store while a run is in
// flight in a real serve: a SQLite file whose filesystem fills up or whose
// files are made immutable, and a
// PostgreSQL that stops answering (every connection dropped, new ones
// refused) for 12 s. Readiness must say the store cannot write; the run's
// end must be recorded once the store is back, with one message per run
// and its verdict; a restart must run nothing again. It counts runs,
// posts and states.
func TestStoreFaultsMidRunLoseNothing(t *testing.T) {
	if os.Geteuid() != 0 {
		// Not skipped: a skip would hide that the full disk is untested.
		t.Fatal("this test mounts a small tmpfs to fill: run the tests as root, as CI does")
	}
	faults := []storeFault{
		{name: "sqlite on a full filesystem", setup: fullFilesystem},
		{name: "sqlite files made immutable", setup: immutableFiles},
		{name: "postgres unreachable mid-run", setup: unreachablePostgres},
	}
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			r := newRestartRig(t)
			location, env, breakIt, mend := f.setup(t, t.TempDir())
			cfg, err := os.ReadFile(r.cfg)
			require.NoError(t, err)
			cfg = bytes.Replace(cfg, []byte("store: "+r.db), []byte("store: {env: T_STORE}"), 1)
			require.NoError(t, os.WriteFile(r.cfg, cfg, 0o600))
			r.env = append(env, "T_STORE="+location)
			r.db = location
			r.start()

			// A run of 8 s: the store breaks while it runs and is mended
			// after it ended.
			r.command("sleep 8")
			r.until("the run is running", func() bool {
				runs := r.runs()["8"]
				return len(runs) == 1 && runs[0].Status == store.RunRunning
			})
			broken := time.Now()
			breakIt()
			r.until("readiness says the store cannot write", func() bool {
				code, body := getReadyz(r.port)
				return code == http.StatusServiceUnavailable && strings.Contains(body, "store")
			})
			// The run ends while the store is broken: it must not be
			// lost. Give it time to end, then mend the store.
			time.Sleep(10 * time.Second)
			mend()
			outage := time.Since(broken)
			r.until("ready again", func() bool {
				code, _ := getReadyz(r.port)
				return code == http.StatusOK
			})
			var run store.Run
			r.until("the run's end is recorded", func() bool {
				runs := r.runs()["8"]
				if len(runs) == 1 && runs[0].Status.Final() {
					run = runs[0]
					return true
				}
				return false
			})
			require.Equal(t, store.RunFinished, run.Status, "the run slept as asked: its end is what the run saw, not an interruption")
			r.until("its message shows the verdict", func() bool {
				// Read again: where the message went is recorded when
				// the store takes it.
				runs := r.runs()["8"]
				if len(runs) != 1 || runs[0].Message == nil {
					return false
				}
				run = runs[0]
				return r.says(run.Message.ID, "Slept as asked")
			})

			// A restart runs nothing again and posts nothing new.
			r.stop()
			posts := len(r.rec.Calls("chat.postMessage"))
			r.start()
			time.Sleep(2 * daemon.StoreProbeInterval)
			r.stop()
			runs := r.runs()
			require.Len(t, runs["8"], 1, "the run is not run a second time")
			require.Equal(t, store.RunFinished, runs["8"][0].Status)
			require.Len(t, r.rec.Calls("chat.postMessage"), posts, "nothing is posted again")
			require.Equal(t, 1, countPosts(r, run.ID), "one top-level message for the run")
			t.Logf("%s: store broken for %s; 1 run, status %s, %d post(s) in all, %d update(s)", f.name, outage.Round(100*time.Millisecond), run.Status, posts, len(r.rec.Calls("chat.update")))
		})
	}
}

// countPosts counts the chat.postMessage calls that opened a message
// about runID (not replies in its thread).
func countPosts(r *restartRig, runID string) int {
	n := 0
	for _, c := range r.rec.Calls("chat.postMessage") {
		if c.Status == http.StatusOK && c.Form.Get("thread_ts") == "" && strings.Contains(c.Form.Get("blocks"), runID) {
			n++
		}
	}
	return n
}

func getReadyz(port int) (int, string) {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", port))
	if err != nil {
		return 0, err.Error()
	}
	defer func() { _ = resp.Body.Close() }() // read in full below
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// fullFilesystem puts the SQLite store on a 3 MiB tmpfs; breaking it fills
// the filesystem, mending it frees the space.
func fullFilesystem(t *testing.T, dir string) (string, []string, func(), func()) {
	t.Helper()
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", dir).CombinedOutput()
	require.NoError(t, err, string(out))
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	filler := filepath.Join(dir, "filler")
	fill := func() {
		f, err := os.Create(filler)
		require.NoError(t, err)
		defer func() { require.NoError(t, f.Close()) }()
		for _, size := range []int{64 << 10, 512} {
			chunk := make([]byte, size)
			for {
				if _, err := f.Write(chunk); err != nil {
					require.ErrorIs(t, err, syscall.ENOSPC)
					break
				}
			}
		}
	}
	free := func() { require.NoError(t, os.Remove(filler)) }
	return filepath.Join(dir, "runbot.db"), nil, fill, free
}

// immutableFiles puts the SQLite store on a small ext4 filesystem (a loop
// mount: tmpfs has no immutable flag); breaking it sets the immutable flag
// on the database and its write-ahead log, so that every write fails with
// EPERM as on a file an operator or a backup tool locked, and mending
// clears it. The shared-memory index is left alone: SQLite writes it
// through a mapping, where a refused write would be a SIGBUS, not an
// error.
func immutableFiles(t *testing.T, dir string) (string, []string, func(), func()) {
	t.Helper()
	img := filepath.Join(t.TempDir(), "store.img")
	for _, c := range [][]string{{"truncate", "-s", "16M", img}, {"mkfs.ext4", "-q", "-F", img}, {"mount", "-o", "loop", img, dir}} {
		out, err := exec.Command(c[0], c[1:]...).CombinedOutput()
		require.NoError(t, err, "%s: %s", strings.Join(c, " "), out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	db := filepath.Join(dir, "runbot.db")
	chattr := func(flag string) func() {
		return func() {
			out, err := exec.Command("chattr", flag, db, db+"-wal").CombinedOutput()
			require.NoError(t, err, string(out))
		}
	}
	return db, nil, chattr("+i"), chattr("-i")
}

// unreachablePostgres gives serve a database on the test binary's
// PostgreSQL through a TCP proxy; breaking it drops every connection and
// refuses new ones, as a stopped server does, and mending it lets them
// through again. The server itself is shared with other tests, so it is
// cut off rather than stopped.
func unreachablePostgres(t *testing.T, _ string) (string, []string, func(), func()) {
	t.Helper()
	location, p := proxiedPostgres(t, storetest.PostgresDatabase(t))
	return location, nil, p.cut, p.heal
}

// proxiedPostgres is dsn reached through a proxy the test can cut.
func proxiedPostgres(t *testing.T, dsn string) (string, *cutProxy) {
	t.Helper()
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	// The test cluster listens on a Unix socket in the directory its
	// host= parameter names; the proxy listens on TCP in front of it.
	network, target := "tcp", u.Host
	q := u.Query()
	if dir := q.Get("host"); strings.HasPrefix(dir, "/") {
		port := u.Port()
		if port == "" {
			port = "5432"
		}
		network, target = "unix", filepath.Join(dir, ".s.PGSQL."+port)
		q.Del("host")
		u.RawQuery = q.Encode()
	}
	p := newCutProxy(t, network, target)
	u.Host = p.addr
	return u.String(), p
}
