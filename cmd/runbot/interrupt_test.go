package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/store"
)

// TestKillDuringRemediation: runbot is killed with SIGKILL while an
// approved action runs. The next runbot process marks the plan
// interrupted, never applies it again, and the audit trail shows what
// started.
func TestKillDuringRemediation(t *testing.T) {
	runbot, _ := buildBinaries(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "runbot.db")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "state"), []byte("broken\n"), 0o644))
	args := []string{"run", "testdata/slow-fix.yaml", "-i", "testdata/local.yaml", "-p", "host=here", "-p", "dir=" + dir,
		"--store", db, "--remediate", "--requested-by", "alice", "--approve-as", "bob"}
	cmd := exec.Command(runbot, args...)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())

	// Wait until the action has started (it appends to applied.log first).
	deadline := time.Now().Add(60 * time.Second)
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "applied.log")); err == nil && len(b) > 0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "the action never started:\n%s", out.String())
		time.Sleep(50 * time.Millisecond)
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()

	// A new runbot process starts: it recovers the store.
	// stdout only: the recovery is logged on stderr.
	showOut, err := exec.Command(runbot, "history", "--store", db, "--format", "json").Output()
	require.NoError(t, err, string(showOut))
	var runs []store.Run
	require.NoError(t, json.Unmarshal(showOut, &runs))
	require.Len(t, runs, 1)
	show, err := exec.Command(runbot, "show", runs[0].ID, "--store", db, "--format", "json").Output()
	require.NoError(t, err, string(show))
	var shown struct {
		Plans []store.Plan       `json:"plans"`
		Audit []store.AuditEvent `json:"audit"`
	}
	require.NoError(t, json.Unmarshal(show, &shown))
	require.Len(t, shown.Plans, 1)
	require.Equal(t, store.PlanInterrupted, shown.Plans[0].State, "a remediation cut short is interrupted, not resumed")
	var kinds []string
	for _, e := range shown.Audit {
		kinds = append(kinds, e.Kind)
	}
	require.Contains(t, kinds, store.AuditAction, "the audit trail shows the action started")

	// Running the diagnosis again proposes a new plan; the interrupted one
	// is never applied again.
	again := exec.Command(runbot, append(args[:len(args)-2], "--approve-as", "nobody")...)
	againOut, _ := again.CombinedOutput()
	require.Contains(t, string(againOut), "approval")
	applied, err := os.ReadFile(filepath.Join(dir, "applied.log"))
	require.NoError(t, err)
	require.Equal(t, 1, strings.Count(string(applied), "applied"), "nothing was applied twice")
}
