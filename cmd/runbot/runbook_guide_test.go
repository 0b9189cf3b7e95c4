package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// guideBlocks returns the bodies of the fenced blocks of path whose info
// string is kind (e.g. "yaml runbook-example"), in order.
func guideBlocks(t *testing.T, path, kind string) []string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer func() { _ = f.Close() }() // read only
	var blocks []string
	var body *strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case body == nil && line == "```"+kind:
			body = &strings.Builder{}
		case body != nil && line == "```":
			blocks = append(blocks, body.String())
			body = nil
		case body != nil:
			body.WriteString(line + "\n")
		}
	}
	require.NoError(t, sc.Err())
	require.Nil(t, body, "%s: a ```%s block is not closed", path, kind)
	return blocks
}

// shellCommands splits a sh block into its commands, joining lines that
// end in a backslash and dropping comments.
func shellCommands(block string) []string {
	var cmds []string
	var cur strings.Builder
	for _, line := range strings.Split(block, "\n") {
		if i := strings.Index(line, "  #"); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if cont, ok := strings.CutSuffix(line, "\\"); ok {
			cur.WriteString(cont)
			continue
		}
		cur.WriteString(line)
		cmds = append(cmds, cur.String())
		cur.Reset()
	}
	return cmds
}

// TestRunbookGuide: the worked example of docs/runbooks.md, taken from the
// page itself, lints clean and does what the page says: the page's own
// commands, run as written (in a scratch directory, with its lock path
// moved there), diagnose the stale lock, then move it aside under
// approval and verify; and the runbook's other diagnoses hold where they
// should, including none at all when the host cannot be reached.
func TestRunbookGuide(t *testing.T) {
	const guide = "../../docs/runbooks.md"
	examples := guideBlocks(t, guide, "yaml runbook-example")
	require.Len(t, examples, 1, "docs/runbooks.md has one ```yaml runbook-example block")
	tries := guideBlocks(t, guide, "sh runbook-try")
	require.Len(t, tries, 1, "docs/runbooks.md has one ```sh runbook-try block")

	runbot, _ := buildBinaries(t)
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "my-runbooks"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "my-runbooks", "stale-lock.yaml"), []byte(examples[0]), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "inventory.yaml"), []byte("hosts: {localhost: {transport: local}}\n"), 0o644))
	lock := filepath.Join(dir, "job.lock")
	env := append(os.Environ(), "PATH="+filepath.Dir(runbot)+":"+os.Getenv("PATH"), "XDG_STATE_HOME="+filepath.Join(dir, "state"))

	sh := func(t *testing.T, command string) (string, int) {
		t.Helper()
		cmd := exec.Command("bash", "-c", command)
		cmd.Dir, cmd.Env = dir, env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		code := 0
		if err != nil {
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit, out.String())
			code = exit.ExitCode()
		}
		return out.String(), code
	}

	t.Run("the page's commands", func(t *testing.T) {
		cmds := shellCommands(tries[0])
		require.Len(t, cmds, 4, "lint, make a stale lock, run, remediate: %q", cmds)
		for i, want := range []struct {
			code int
			says []string
		}{
			{0, []string{"no errors"}},
			{0, nil},
			{exitCritical, []string{"CRITICAL stale_lock", "holder = gone", "proposed remediation: move_lock_aside"}},
			{0, []string{"mv -- " + lock + " " + lock + ".stale-runbot", "Approved by alice", "RECOVERED — verified: the symptom is gone"}},
		} {
			c := strings.ReplaceAll(cmds[i], "/tmp/job.lock", lock)
			out, code := sh(t, c)
			require.Equal(t, want.code, code, "%s\n%s", c, out)
			for _, s := range want.says {
				require.Contains(t, out, s, c)
			}
		}
		require.NoFileExists(t, lock)
		require.FileExists(t, lock+".stale-runbot", "the lock is kept, moved aside")
	})

	t.Run("the page's recorded cases", func(t *testing.T) {
		testFiles := guideBlocks(t, guide, "yaml runbook-test")
		require.Len(t, testFiles, 1, "docs/runbooks.md has one ```yaml runbook-test block")
		records := guideBlocks(t, guide, "sh runbook-record")
		require.Len(t, records, 1, "docs/runbooks.md has one ```sh runbook-record block")
		require.NoError(t, os.WriteFile(filepath.Join(dir, "my-runbooks", "stale-lock_test.yaml"), []byte(testFiles[0]), 0o644))
		cmds := shellCommands(records[0])
		require.Len(t, cmds, 5, "no lock, record, stale lock, record, test: %q", cmds)
		for i, code := range []int{0, 0, 0, exitCritical, 0} {
			c := strings.ReplaceAll(cmds[i], "/tmp/job.lock", lock)
			out, got := sh(t, c)
			require.Equal(t, code, got, "%s\n%s", c, out)
		}
		out, _ := sh(t, "runbot test my-runbooks/")
		require.Contains(t, out, "--- PASS: stale-lock/stale")
		require.Contains(t, out, "--- PASS: stale-lock/no-lock")

		// One recorded value edited, as the page says: the verdict follows
		// the recording.
		stdout := filepath.Join(dir, "my-runbooks", "testdata", "stale", "lock", "host", "cmd-1.stdout")
		b, err := os.ReadFile(stdout)
		require.NoError(t, err)
		require.Contains(t, string(b), "holder=gone")
		require.NoError(t, os.WriteFile(stdout, []byte(strings.Replace(string(b), "holder=gone", "holder=running", 1)), 0o644))
		out, code := sh(t, "runbot test my-runbooks/")
		require.Equal(t, 1, code, out)
		require.Contains(t, out, "--- FAIL: stale-lock/stale")
		require.Contains(t, out, "expected: [stale_lock]")
		require.Contains(t, out, "got:      [not_blocked]")
		require.Contains(t, out, "--- PASS: stale-lock/no-lock")
		require.NoError(t, os.RemoveAll(filepath.Join(dir, "my-runbooks", "stale-lock_test.yaml")))
	})

	t.Run("explain shows the remediation's commands", func(t *testing.T) {
		out, code := sh(t, "runbot explain my-runbooks/stale-lock.yaml -i inventory.yaml -p host=localhost -p lock="+lock)
		require.Equal(t, 0, code, out)
		require.Contains(t, out, "remediation move_lock_aside (needs approval by @oncall)\n"+
			"    command on host@localhost\n"+
			"        cmd = mv -- "+lock+" "+lock+".stale-runbot\n"+
			"        rollback_cmd = mv -- "+lock+".stale-runbot "+lock+"\n")
	})

	run := func(t *testing.T, inv string) (string, int) {
		t.Helper()
		return sh(t, "runbot run my-runbooks/stale-lock.yaml -i "+inv+" -p host=localhost -p lock="+lock)
	}
	t.Run("no lock", func(t *testing.T) {
		require.NoError(t, os.RemoveAll(lock))
		out, code := run(t, "inventory.yaml")
		require.Equal(t, 0, code, out)
		require.Contains(t, out, "not_blocked")
		require.NotContains(t, out, "stale_lock")
	})
	t.Run("a live holder past stale_after", func(t *testing.T) {
		holder := exec.Command("sleep", "300")
		require.NoError(t, holder.Start())
		t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
		require.NoError(t, os.WriteFile(lock, []byte(strconv.Itoa(holder.Process.Pid)+"\n"), 0o644))
		out, code := sh(t, "touch -d '20 minutes ago' "+lock)
		require.Equal(t, 0, code, out)
		out, code = run(t, "inventory.yaml")
		require.Equal(t, 0, code, out)
		require.Contains(t, out, "long_run")
		require.NotContains(t, out, "stale_lock")
		require.NotContains(t, out, "move_lock_aside")
	})
	t.Run("host unreachable: no verdict", func(t *testing.T) {
		// An SSH host on a port nothing listens on: the step cannot run,
		// and "nothing blocks the job" must not be concluded from that.
		inv := "hosts: {localhost: {address: 127.0.0.1, port: 1, user: nobody, host_keys: ['ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHl4pqoQ6SK5tp7RzYz1bY2uV2rw3OUQUU1A7WDg2Cfi']}}\n"
		require.NoError(t, os.WriteFile(filepath.Join(dir, "unreachable.yaml"), []byte(inv), 0o644))
		out, code := run(t, "unreachable.yaml")
		require.Equal(t, exitInconclusive, code, out)
		require.NotContains(t, out, "not_blocked")
	})
}
