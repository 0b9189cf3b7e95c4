//go:build e2e

package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/test/e2e/testhost"
)

// TestFailedFixIsRolledBackAndRestartedAgain: a fix that does not help is
// undone for real. The serve scripts are restored byte for byte, and the
// units are restarted once more, so the running processes no longer carry
// the flag the failed fix added.
func TestFailedFixIsRolledBackAndRestartedAgain(t *testing.T) {
	c := testhost.Up(t, 1)
	h := c.Hosts[0]
	store := filepath.Join(t.TempDir(), "runbot.db")

	c.Step(t, h, "prefill's serve script gains a fault that only shows after a restart")
	// The fault makes prefill's forward pass hang from its next start on,
	// so the fix's restart brings up a deployment that still cannot answer.
	h.Run(t, "sed -i 's|--log-level info|--log-level info --sim-fault prefill-stall|' "+testhost.PrefillScript)
	before := map[string]string{}
	for _, script := range []string{testhost.PrefillScript, testhost.DecodeScript} {
		before[script] = h.Run(t, "sha256sum "+script)
	}
	startLoad(t, h)
	testhost.Eventually(t, 30*time.Second, "decode runs batches", func() (bool, string) {
		return strings.Contains(h.Journal(t, testhost.UnitDecode, 200), "Decode batch"), ""
	})

	c.Step(t, h, "the abort burst wedges decode")
	require.Contains(t, h.Fault(t, "decode", `{"fault":"pd-wedge"}`), `"wedged":true`)
	time.Sleep(6 * time.Second)
	pidBefore := h.UnitState(t, testhost.UnitDecode)["MainPID"]

	c.Step(t, h, "the approved fix does not verify, so runbot rolls it back")
	res, stderr := runRunbot(t, c, store, append(e2eParams(h.Deployment), "--remediate", "--requested-by", "alice", "--approve-as", "bob", "--group", "sre-oncall=bob")...)
	require.Equal(t, "pd_transfer_wedge", res.diagnosis(), "findings: %+v\nstderr: %s", res.Findings, stderr)
	require.NotNil(t, res.Remediation, stderr)
	require.Equal(t, "rolled_back", res.Remediation.State, res.Remediation.Message)
	require.False(t, res.Remediation.Recovered)
	require.Contains(t, res.Remediation.Message, "2 change(s) rolled back, 2 action(s) run again so the rollback takes effect")

	c.Step(t, h, "the scripts are restored and the running processes are back on them")
	for script, sum := range before {
		require.Equal(t, sum, h.Run(t, "sha256sum "+script), "%s restored byte for byte", script)
	}
	for _, unit := range []string{testhost.UnitPrefill, testhost.UnitDecode} {
		st := h.UnitState(t, unit)
		require.Equal(t, "active", st["ActiveState"], unit)
		require.NotContains(t, h.Run(t, "tr '\\0' ' ' < /proc/"+st["MainPID"]+"/cmdline"), "--disable-overlap-schedule",
			"%s was restarted after the restore, so it does not run the failed fix's flag", unit)
	}
	require.NotEqual(t, pidBefore, h.UnitState(t, testhost.UnitDecode)["MainPID"], "decode was restarted")
}
