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

// TestWords reads back what Join writes, and refuses every line a shell
// would read as more than literal words.
func TestWords(t *testing.T) {
	for _, args := range [][]string{
		{"journalctl", "-u", "sglang-dsv4-decode", "-o", "json", "--since", "@1764680000"},
		{"cat", "--", "/root/it's here.sh"},
		{"grep", "-c", "", "$(id)", "a\nb", "'", "''", "*", "~"},
		{"stat", "-c", "%Y", "--", "/proc/1/cmdline"},
	} {
		line := shell.Join(args...)
		got, ok := shell.Words(line)
		require.True(t, ok, line)
		require.Equal(t, args, got, line)
	}
	for _, line := range []string{
		"", "journalctl | head", "cat /proc/loadavg; id", "echo $HOME", "ls *", "a  b", " a", "a ",
		`echo "x"`, "cat < /etc/passwd", "echo 'unclosed", "echo 'a'b", "x=1 env", "a\tb", "a\nb",
		"cat ~/x", "sh -c 'true' &", "env =x", "'x=1' env",
	} {
		_, ok := shell.Words(line)
		require.False(t, ok, line)
	}
}
