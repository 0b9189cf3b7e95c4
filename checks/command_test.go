package checks

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/argspec"
	"github.com/runbot/runbot/internal/target"
	"github.com/runbot/runbot/remote"
)

// TestCommandEvidence: the evidence names a one-line command as it is and
// a script by its first line and line count, then each extracted value in
// name order, the same on every run.
func TestCommandEvidence(t *testing.T) {
	for _, tc := range []struct {
		name, cmd string
		want      []string
	}{
		{name: "one line", cmd: "echo b=2 a=1 c=3", want: []string{
			"`echo b=2 a=1 c=3` exited 0 after", "a = 1", "b = 2", "c = 3", "d: no match for d=(\\d+)"}},
		{name: "script", cmd: "x=1\necho b=2 a=$x c=3\ntrue\n", want: []string{
			"`x=1 … (+2 lines)` exited 0 after", "a = 1", "b = 2", "c = 3", "d: no match for d=(\\d+)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := Env{
				Target: target.Target{Role: "host", Host: "here", Runner: &remote.Local{Name: "here"}},
				Args: commandType.Spec.WithDefaults(argspec.Values{"cmd": tc.cmd, "extract": map[string]string{
					"c": `c=(\d+)`, "a": `a=(\d+)`, "d": `d=(\d+)`, "b": `b=(\d+)`}}),
			}
			for range 5 {
				res, err := Command{}.Run(t.Context(), env)
				require.NoError(t, err)
				require.Len(t, res.Evidence, len(tc.want))
				require.Contains(t, res.Evidence[0], tc.want[0])
				require.Equal(t, tc.want[1:], res.Evidence[1:])
			}
		})
	}
}
