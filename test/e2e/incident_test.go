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
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/test/e2e/testhost"
)

var (
	runbotOnce sync.Once
	runbotBin  string
	runbotErr  error
)

// runbotBinary builds runbot once for all e2e tests.
func runbotBinary(t *testing.T) string {
	t.Helper()
	runbotOnce.Do(func() {
		dir, err := os.MkdirTemp("", "runbot-e2e-bin-") //nolint:usetesting // built once for every e2e test, which outlives any one test
		if err != nil {
			runbotErr = err
			return
		}
		runbotBin = filepath.Join(dir, "runbot")
		out, err := exec.Command("go", "build", "-o", runbotBin, "../../cmd/runbot").CombinedOutput()
		if err != nil {
			runbotErr = fmt.Errorf("build runbot: %w\n%s", err, out)
		}
	})
	require.NoError(t, runbotErr)
	return runbotBin
}

// runResult is the part of `runbot run --format json` the tests read.
type runResult struct {
	RunID     string `json:"run_id"`
	Outcome   string `json:"outcome"`
	Diagnoses []struct {
		ID          string `json:"id"`
		Remediation string `json:"remediation"`
	} `json:"diagnoses"`
	Findings []struct {
		ID      string `json:"id"`
		Summary string `json:"summary"`
	} `json:"findings"`
	Steps []struct {
		ID     string `json:"id"`
		Target string `json:"target"`
		Status string `json:"status"`
		Error  string `json:"error"`
	} `json:"steps"`
	Remediation *struct {
		State     string `json:"state"`
		Recovered bool   `json:"recovered"`
		Message   string `json:"message"`
		Diff      string `json:"diff"`
	} `json:"remediation"`
}

func (r runResult) diagnosis() string {
	if len(r.Diagnoses) == 0 {
		return "none"
	}
	return r.Diagnoses[0].ID
}

// e2eParams keep the waits short; the logic is the production one.
func e2eParams(dep string) []string {
	return []string{"-p", "deployment=" + dep, "-p", "probe_timeout=8s", "-p", "samples=3", "-p", "sample_interval=1s", "-p", "stall_after=5s"}
}

// runbot runs the CLI against the cluster's inventory and decodes its JSON.
func runRunbot(t *testing.T, c *testhost.Cluster, store string, args ...string) (runResult, string) {
	t.Helper()
	return runRunbotWith(t, c.Inventory, store, args...)
}

func runRunbotWith(t *testing.T, inventory, store string, args ...string) (runResult, string) {
	t.Helper()
	full := append([]string{"run", "sglang-pd-wedge", "-i", inventory, "--store", store, "--format", "json"}, args...)
	cmd := exec.Command(runbotBinary(t), full...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var res runResult
	if jerr := json.Unmarshal(stdout.Bytes(), &res); jerr != nil {
		t.Fatalf("runbot %s: %v; stdout:\n%s\nstderr:\n%s", strings.Join(full, " "), err, stdout.String(), stderr.String())
	}
	return res, stderr.String()
}

// startLoad runs the simulator's load generator inside the host, as the
// incident's clients were: requests through the router, 5 s client timeout.
func startLoad(t *testing.T, h *testhost.Host) {
	t.Helper()
	h.Run(t, fmt.Sprintf("systemd-run --unit=e2e-load --collect /usr/local/bin/sglang-sim load --rate 2 --duration 10m --timeout 5s --id-prefix client http://127.0.0.1:%d", testhost.RouterPort))
	t.Cleanup(func() { _, _ = h.Exec(t.Context(), "systemctl stop e2e-load") })
}

// TestIncidentOverSSH is the incident's diagnostic sequence and fix, run by
// the CLI over SSH against real systemd units: journalctl, systemctl show,
// /proc/<MainPID>/cmdline, serve-script grep and probes through SSH
// tunnels (the deployment listens on the host's loopback only).
func TestIncidentOverSSH(t *testing.T) {
	c := testhost.Up(t, 1)
	h := c.Hosts[0]
	store := filepath.Join(t.TempDir(), "runbot.db")

	c.Step(t, h, "the healthy deployment is diagnosed healthy")
	startLoad(t, h)
	testhost.Eventually(t, 30*time.Second, "decode runs batches", func() (bool, string) {
		j := h.Journal(t, testhost.UnitDecode, 200)
		return strings.Contains(j, "Decode batch"), ""
	})
	res, _ := runRunbot(t, c, store, e2eParams(h.Deployment)...)
	require.Equal(t, "healthy", res.diagnosis(), "findings: %+v", res.Findings)

	c.Step(t, h, "the abort burst wedges decode (overlap schedule on)")
	out := h.Fault(t, "decode", `{"fault":"pd-wedge"}`)
	require.Contains(t, out, `"wedged":true`)
	time.Sleep(6 * time.Second)

	c.Step(t, h, "runbot diagnoses pd_transfer_wedge over SSH and fixes it with approval")
	res, stderr := runRunbot(t, c, store, append(e2eParams(h.Deployment), "--remediate", "--requested-by", "alice", "--approve-as", "bob", "--group", "sre-oncall=bob")...)
	require.Equal(t, "pd_transfer_wedge", res.diagnosis(), "findings: %+v\nstderr: %s", res.Findings, stderr)
	require.Equal(t, "disable_overlap_and_restart", res.Diagnoses[0].Remediation)
	require.NotNil(t, res.Remediation, stderr)
	require.Equal(t, 2, strings.Count(res.Remediation.Diff, "+  --disable-overlap-schedule"), "the diff adds the flag to both serve scripts:\n%s", res.Remediation.Diff)
	require.Equal(t, "done", res.Remediation.State, res.Remediation.Message)
	require.True(t, res.Remediation.Recovered)

	c.Step(t, h, "the scripts and the running processes have the flag")
	for _, unit := range []string{testhost.UnitPrefill, testhost.UnitDecode} {
		pid := h.UnitState(t, unit)["MainPID"]
		require.Contains(t, h.Run(t, "tr '\\0' ' ' < /proc/"+pid+"/cmdline"), "--disable-overlap-schedule", unit)
	}
	for _, script := range []string{testhost.PrefillScript, testhost.DecodeScript} {
		require.Contains(t, h.Run(t, "cat "+script), "--disable-overlap-schedule")
	}

	c.Step(t, h, "the same burst no longer wedges decode")
	out = h.Fault(t, "decode", `{"fault":"pd-wedge"}`)
	require.Contains(t, out, `"wedged":false`)
	res, _ = runRunbot(t, c, store, e2eParams(h.Deployment)...)
	require.Equal(t, "healthy", res.diagnosis(), "findings: %+v", res.Findings)

	c.Step(t, h, "the audit trail is in the store")
	show, err := exec.Command(runbotBinary(t), "history", "--store", store).CombinedOutput()
	require.NoError(t, err, string(show))
	require.Contains(t, string(show), "pd_transfer_wedge")
}

// TestChangedHostKeyIsRefused: a host whose key is not the pinned one is
// refused by name; nothing runs on it.
func TestChangedHostKeyIsRefused(t *testing.T) {
	c := testhost.Up(t, 1)
	h := c.Hosts[0]
	c.Step(t, h, "pin another key for the host")
	inv, err := os.ReadFile(c.Inventory)
	require.NoError(t, err)
	wrongKnown := filepath.Join(t.TempDir(), "known_hosts")
	require.NoError(t, os.WriteFile(wrongKnown, []byte(h.Address+" ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEWx4/cxRp8h16KKLhlJDdGGONVBuQu4tpHb5UcL5ilb\n"), 0o600))
	bad := filepath.Join(t.TempDir(), "inventory.yaml")
	require.NoError(t, os.WriteFile(bad, []byte(strings.ReplaceAll(string(inv), c.KnownHosts, wrongKnown)), 0o600))
	res, _ := runRunbotWith(t, bad, filepath.Join(t.TempDir(), "runbot.db"), e2eParams(h.Deployment)...)
	require.Equal(t, "inconclusive", res.Outcome)
	errored := 0
	for _, s := range res.Steps {
		require.NotEqual(t, "ok", s.Status, "nothing may run on a host whose key is not the pinned one")
		if s.Status == "error" {
			errored++
			require.Contains(t, s.Error, "host key")
			require.Contains(t, s.Error, h.Name)
		}
	}
	require.Positive(t, errored)
	require.Empty(t, res.Findings, "an SSH refusal is never a finding about the service")
}

// TestStartLimitHitIsEscalatedNotLooped: a unit that systemd gave up on is
// reported as down, and no restart is proposed in a loop.
func TestStartLimitHitIsEscalatedNotLooped(t *testing.T) {
	c := testhost.Up(t, 1)
	h := c.Hosts[0]
	c.Step(t, h, "decode crash-loops until systemd gives up")
	h.Run(t, "cp "+testhost.DecodeScript+" /root/decode.orig && sed -i 's|^exec .*|exit 3|' "+testhost.DecodeScript+" && systemctl restart "+testhost.UnitDecode+" || true")
	t.Cleanup(func() {
		_, _ = h.Exec(t.Context(), "cp /root/decode.orig "+testhost.DecodeScript+"; systemctl reset-failed "+testhost.UnitDecode+"; systemctl start "+testhost.UnitDecode)
	})
	testhost.Eventually(t, 60*time.Second, "decode unit failed", func() (bool, string) {
		st := h.UnitState(t, testhost.UnitDecode)
		return st["ActiveState"] == "failed", st["ActiveState"]
	})
	res, _ := runRunbot(t, c, filepath.Join(t.TempDir(), "runbot.db"), e2eParams(h.Deployment)...)
	require.Equal(t, "decode_down", res.diagnosis(), "findings: %+v", res.Findings)
	require.Empty(t, res.Diagnoses[0].Remediation, "a crash is not remediated by a restart loop")
}
