package sshrun_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/sshdtest"
	"github.com/runbot/runbot/remote"
	"github.com/runbot/runbot/remote/sshrun"
)

// TestSSHSystemdFallsBackToSystemctl: where systemd's bus cannot be
// reached through the SSH connection, unit state is read with systemctl,
// as before, and the runner remembers why. Real sshd; this machine runs no
// systemd, so the success path is an e2e test on the systemd test hosts
// (TestUnitStateOverSystemdBus).
func TestSSHSystemdFallsBackToSystemctl(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		config []string
	}{
		{"sshd refuses to forward unix sockets", []string{"AllowStreamLocalForwarding no"}},
		{"the host runs no systemd", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// A systemctl that answers show, first on the sessions' PATH.
			bin := t.TempDir()
			calls := filepath.Join(bin, "calls")
			script := "#!/bin/sh\necho \"$*\" >> " + calls + "\nprintf 'Id=decode.service\\nLoadState=loaded\\nActiveState=active\\nSubState=running\\nMainPID=4242\\nNRestarts=3\\n'\n"
			require.NoError(t, os.WriteFile(filepath.Join(bin, "systemctl"), []byte(script), 0o755))
			srv := sshdtest.Start(t, sshdtest.Options{Config: append(tc.config, "SetEnv SHLVL=1 PATH="+bin+":/usr/bin:/bin")})
			s := newSSH(t, hostConfig(t, srv))
			m := sshrun.Systemd{SSH: s, Systemctl: remote.Systemctl{Runner: s}}

			for range 2 {
				st, err := m.Show(testCtx(t), "decode")
				require.NoError(t, err)
				require.Equal(t, "active", st.ActiveState)
				require.Equal(t, 4242, st.MainPID)
				require.Equal(t, 3, st.NRestarts)
			}
			// sshd answers both with "connect failed"; the refusal is
			// remembered, naming the socket.
			require.Contains(t, s.SystemdBusRefused(), "connect to systemd on web1 over ssh ("+sshrun.SystemdPrivateBus+")")
			b, err := os.ReadFile(calls)
			require.NoError(t, err)
			require.Equal(t, 2, countLines(string(b)), "both reads went to systemctl: %s", b)
			require.Equal(t, "systemctl restart decode", m.RestartCall("decode"), "changes always go through systemctl")
		})
	}
}

func countLines(s string) int {
	n := 0
	for _, c := range s {
		if c == '\n' {
			n++
		}
	}
	return n
}
