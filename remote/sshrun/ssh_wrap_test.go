package sshrun

import (
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/shell"
	"github.com/runbot/runbot/remote"
)

func TestHeaderWriter(t *testing.T) {
	cases := []struct {
		name   string
		chunks []string
		out    string
		group  *procGroup
	}{
		{name: "header then output", chunks: []string{"runbot-pgid 42 42\nhello\n"}, out: "hello\n", group: &procGroup{pid: 42, leader: true}},
		{name: "split across writes", chunks: []string{"runbot-p", "gid 42 4", "2\nhel", "lo"}, out: "hello", group: &procGroup{pid: 42, leader: true}},
		{name: "not a group leader", chunks: []string{"runbot-pgid 42 7\n"}, group: &procGroup{pid: 42}},
		{name: "no /proc", chunks: []string{"runbot-pgid 42 \n"}, group: &procGroup{pid: 42}},
		{name: "noisy login script first", chunks: []string{"Welcome!\nrunbot-pgid 9 9\nout\n"}, out: "Welcome!\nout\n", group: &procGroup{pid: 9, leader: true}},
		{name: "header text later is output", chunks: []string{"runbot-pgid 9 9\nrunbot-pgid 1 1\n"}, out: "runbot-pgid 1 1\n", group: &procGroup{pid: 9, leader: true}},
		{name: "no header at all", chunks: []string{strings.Repeat("x", maxHeaderScan+1)}, out: strings.Repeat("x", maxHeaderScan+1)},
		{name: "no header, short output", chunks: []string{"partial"}, out: "partial"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newHeaderWriter(remote.NewCapWriter(0))
			for _, c := range tc.chunks {
				n, err := w.Write([]byte(c))
				require.NoError(t, err)
				require.Equal(t, len(c), n)
			}
			out, truncated := w.output()
			require.Equal(t, tc.out, string(out))
			require.False(t, truncated)
			select {
			case g := <-w.found:
				require.NotNil(t, tc.group, "unexpected header %+v", g)
				require.Equal(t, *tc.group, g)
			default:
				require.Nil(t, tc.group, "header not found")
			}
		})
	}
}

// TestWrapLineInLocalShells runs the wrapped line the way sshd would (the
// login shell with -c, in a new session) under each POSIX shell present.
func TestWrapLineInLocalShells(t *testing.T) {
	for _, sh := range []string{"/bin/sh", "/bin/dash", "/bin/bash", "/bin/zsh", "/bin/ksh", "/bin/mksh", "/bin/busybox"} {
		if _, err := exec.LookPath(sh); err != nil {
			continue
		}
		// The first line goes to /bin/sh; the second, literal words, is
		// exec'd by the login shell itself. Both must come out the same.
		for _, line := range []string{`printf '%s|' "$0" 'it'"'"'s'; exit 4`, shell.Join("/bin/sh", "-c", `printf '%s|' "$0" 'it'"'"'s'; exit 4`)} {
			t.Run(sh+" "+line, func(t *testing.T) {
				runWrapped(t, sh, line)
			})
		}
	}
}

// TestWrapLineExecsLiteralWords: a line of literal words naming a program
// is exec'd by the login shell; anything a shell would read differently
// from /bin/sh, or run itself, goes to /bin/sh.
func TestWrapLineExecsLiteralWords(t *testing.T) {
	cases := map[string]bool{
		shell.Join("journalctl", "-u", "sglang-dsv4-decode", "--since", "@1764680000", "-o", "json"): true,
		shell.Join("cat", "--", "/root/it's here.sh"):                                                true,
		"/usr/bin/systemctl show -p MainPID x.service":                                               true,
		"echo hi":                     false, // dash's echo is not coreutils'
		"kill -KILL -42":              false,
		"cd /tmp":                     false,
		"journalctl -u x | head -n 1": false,
		"x=1 env":                     false,
		"cat $HOME/x":                 false,
		"sh -c 'true' && reboot":      false,
		"journalctl  -u x":            false,
	}
	for line, direct := range cases {
		got := wrapLine(line)
		require.Equal(t, direct, got == wrapperPrefix+line, "%s -> %s", line, got)
		if !direct {
			require.Equal(t, wrapperPrefix+"/bin/sh -c "+shell.Quote(line), got)
		}
	}
}

func runWrapped(t *testing.T, sh, line string) {
	t.Helper()
	args := []string{"-c", wrapLine(line)}
	if strings.HasSuffix(sh, "busybox") {
		args = append([]string{"sh"}, args...)
	}
	cmd := exec.Command(sh, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	out, err := cmd.Output()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	require.Equal(t, 4, exit.ExitCode())
	w := newHeaderWriter(remote.NewCapWriter(0))
	_, err = w.Write(out)
	require.NoError(t, err)
	got, _ := w.output()
	require.Equal(t, "/bin/sh|it's|", string(got))
	g := <-w.found
	require.True(t, g.leader, "the login shell leads its process group under setsid")
}
