package sim_test

import (
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSubcommandHelpExitsZero: asking a subcommand for its flags prints
// them and succeeds, as a new user trying `sglang-sim up --help` expects;
// a wrong flag still fails.
func TestSubcommandHelpExitsZero(t *testing.T) {
	for _, sub := range []string{"up", "down", "ctl", "load"} {
		t.Run(sub, func(t *testing.T) {
			out, err := exec.Command(simBinary, sub, "--help").CombinedOutput()
			require.NoError(t, err, string(out))
			require.Contains(t, string(out), "Usage of "+sub)
		})
	}
	out, err := exec.Command(simBinary, "up", "--no-such-flag").CombinedOutput()
	require.Error(t, err, string(out))
	require.Contains(t, string(out), "flag provided but not defined")
}
