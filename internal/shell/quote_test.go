package shell_test

import (
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/shell"
)

// TestQuoteSurvivesRealShell hands each hostile value to a real /bin/sh and
// checks that the shell sees exactly one word equal to the input.
func TestQuoteSurvivesRealShell(t *testing.T) {
	cases := []string{
		"plain", "", "; rm -rf /", "$(id)", "`id`", "a\nb", "it's", `"dq"`,
		"${HOME}", "*", "~", "a b", "héllo ☃", "\\", "'", "''", "-rf", "x\x00"[:1], "&&", "|", ">", "<(x)",
	}
	for _, in := range cases {
		t.Run(in, func(t *testing.T) {
			out, err := exec.Command("/bin/sh", "-c", "printf %s "+shell.Quote(in)).Output()
			require.NoError(t, err)
			require.Equal(t, in, string(out))
		})
	}
}

func TestJoin(t *testing.T) {
	require.Equal(t, "journalctl -u 'a b' --since '5 min ago'", shell.Join("journalctl", "-u", "a b", "--since", "5 min ago"))
}
