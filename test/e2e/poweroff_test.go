//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/test/e2e/testhost"
)

// TestHostPoweredOffMidRun: one of two hosts goes away while a step runs
// on both. Its target reports an error, the other host's steps complete,
// and the run is inconclusive, not a false finding.
func TestHostPoweredOffMidRun(t *testing.T) {
	c := testhost.Up(t, 2)
	dir := t.TempDir()
	inv, err := os.ReadFile(c.Inventory)
	require.NoError(t, err)
	hostsPart := string(inv)[:strings.Index(string(inv), "deployments:")]
	pair := hostsPart + fmt.Sprintf("deployments:\n  pair:\n    roles:\n      a: {host: %s}\n      b: {host: %s}\n", c.Hosts[0].Name, c.Hosts[1].Name)
	invPath := filepath.Join(dir, "inventory.yaml")
	require.NoError(t, os.WriteFile(invPath, []byte(pair), 0o600))
	rb := filepath.Join(dir, "pair.yaml")
	require.NoError(t, os.WriteFile(rb, []byte(`
name: pair
params: {deployment: {type: deployment, required: true}}
steps:
  - {id: slow, check: command, target: [a, b], timeout: 90s, with: {cmd: 'sleep 8; echo ok'}}
  - {id: quick, check: command, target: [a, b], with: {cmd: 'hostname'}}
findings:
  - {id: all_ok, severity: info, when: 'all(steps.slow.targets, .stdout == "ok\n")', summary: both answered}
  - {id: none_ok, severity: critical, when: 'none(steps.slow.targets, .stdout == "ok\n")', summary: neither answered}
`), 0o600))

	c.Step(t, nil, "a run on both hosts starts; th2 is powered off during it")
	cmd := exec.Command(runbotBinary(t), "run", rb, "-i", invPath, "-p", "deployment=pair", "--store", filepath.Join(dir, "rb.db"), "--format", "json")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	require.NoError(t, cmd.Start())
	time.Sleep(3 * time.Second)
	out, err := exec.Command("bash", "../testhost/down.sh", c.Hosts[1].Name).CombinedOutput()
	require.NoError(t, err, string(out))
	err = cmd.Wait()
	took := time.Since(start)

	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "runbot must finish: %v\n%s", err, stderr.String())
	require.Equal(t, 3, exit.ExitCode(), "inconclusive: %s", stderr.String())
	var res runResult
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &res), stdout.String())
	status := map[string]string{}
	for _, s := range res.Steps {
		status[s.ID+"@"+s.Target] = s.Status
	}
	require.Equal(t, "ok", status["slow@a"])
	require.Equal(t, "ok", status["quick@a"])
	require.Equal(t, "ok", status["quick@b"], "it ran before the power went")
	require.Contains(t, []string{"error", "timeout"}, status["slow@b"])
	require.Equal(t, "inconclusive", res.Outcome)
	require.Empty(t, res.Findings, "no finding from a host that went away")
	require.Less(t, took, 80*time.Second, "a dead host is noticed, not waited on forever")
}
