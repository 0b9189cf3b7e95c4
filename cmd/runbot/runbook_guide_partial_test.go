package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRunbookGuidePartialFix runs the partial-fix example of
// docs/runbooks.md, taken from the page, on this machine: a log directory
// over a 10 MB budget whose old logs compress to little. When compressing
// brings it under its budget the fix verifies and the outcome names the
// warning left; when it does not, verification fails naming the finding
// and the size it measured, and nothing is rolled back.
func TestRunbookGuidePartialFix(t *testing.T) {
	t.Parallel()
	examples := guideBlocks(t, "../../docs/runbooks.md", "yaml runbook-partial-fix")
	require.Len(t, examples, 1, "docs/runbooks.md has one ```yaml runbook-partial-fix block")
	runbot, _ := buildBinaries(t)

	for name, tc := range map[string]struct {
		oldMB, freshMB int
		code           int
		says           []string
		gzipped        bool
	}{
		"enough space freed": {oldMB: 8, freshMB: 8, code: 0, gzipped: true, says: []string{
			"RECOVERED — verified: the symptom is gone; warning finding tight still holds: DIR uses 9 MB, past 80% of its budget of 10 MB ([usage@host] `echo ",
		}},
		"not enough freed": {oldMB: 2, freshMB: 10, code: exitCritical, gzipped: true, says: []string{
			"NOT RECOVERED — verification failed: the symptom is still there: diagnosis logs_over_budget still holds: ",
			"; finding over_budget still holds: DIR uses 11 MB, over its budget of 10 MB ([usage@host] `echo ",
		}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			rb := filepath.Join(dir, "log-budget.yaml")
			require.NoError(t, os.WriteFile(rb, []byte(examples[0]), 0o600))
			inv := filepath.Join(dir, "inventory.yaml")
			require.NoError(t, os.WriteFile(inv, []byte("hosts: {localhost: {transport: local}}\n"), 0o600))
			logs := filepath.Join(dir, "logs")
			require.NoError(t, os.Mkdir(logs, 0o755))
			// Old logs compress to almost nothing; fresh ones are not
			// touched (written within the hour). du -sm rounds up, so N
			// MiB of fresh logs and a few KB of compressed ones read as
			// N+1 MB.
			old := filepath.Join(logs, "old.log")
			require.NoError(t, os.WriteFile(old, make([]byte, tc.oldMB<<20), 0o600))
			twoHoursAgo := time.Now().Add(-2 * time.Hour)
			require.NoError(t, os.Chtimes(old, twoHoursAgo, twoHoursAgo))
			fresh := make([]byte, tc.freshMB<<20)
			for i := range fresh {
				fresh[i] = byte(i*7919 ^ i>>8*31 ^ i>>16*131) // not compressible by much; never gzipped
			}
			require.NoError(t, os.WriteFile(filepath.Join(logs, "app.log"), fresh, 0o600))

			cmd := exec.Command(runbot, "run", rb, "-i", inv, "-p", "host=localhost", "-p", "dir="+logs, "-p", "budget_mb=10",
				"--remediate", "--group", "oncall=alice", "--approve-as", "alice")
			cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+filepath.Join(dir, "state"))
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			code := 0
			if err != nil {
				var exit *exec.ExitError
				require.ErrorAs(t, err, &exit, out.String())
				code = exit.ExitCode()
			}
			require.Equal(t, tc.code, code, out.String())
			for _, s := range tc.says {
				require.Contains(t, out.String(), strings.ReplaceAll(s, "DIR", logs))
			}
			require.NoFileExists(t, old, "the old log was compressed")
			require.FileExists(t, old+".gz", "rollback: never keeps the compressed log")
		})
	}
}
