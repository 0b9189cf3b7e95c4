package sshdtest_test

import (
	"bufio"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/sshdtest"
)

// sshCmd runs OpenSSH's own client against srv with strict host key
// checking, so the helper is checked by a client other than runbot's.
func sshCmd(t *testing.T, srv *sshdtest.Server, known string, line string) *exec.Cmd {
	t.Helper()
	return exec.Command("ssh", "-p", strconv.Itoa(srv.Port), "-i", srv.ClientKeyFile,
		"-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-o", "StrictHostKeyChecking=yes",
		"-o", "UserKnownHostsFile="+known, "-o", "ConnectTimeout=10",
		srv.User+"@"+srv.Host, line)
}

func TestServerLifecycle(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{})
	known := srv.KnownHostsFile(t)

	out, err := sshCmd(t, srv, known, "echo hello").CombinedOutput()
	require.NoError(t, err, string(out))
	require.Equal(t, "hello\n", string(out))

	// DropConnections ends a session in progress; the server stays up.
	long := sshCmd(t, srv, known, "echo $$; exec sleep 30")
	stdout, err := long.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, long.Start())
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	// The remote command outlives its connection; stop it by its pid.
	if pid, err := strconv.Atoi(strings.TrimSpace(line)); err == nil {
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) }) // it may be gone already
	}
	srv.DropConnections()
	require.Error(t, long.Wait(), "the session must end when its connection is dropped")

	out, err = sshCmd(t, srv, known, "echo still-up").CombinedOutput()
	require.NoError(t, err, string(out))

	srv.Stop()
	out, err = sshCmd(t, srv, known, "true").CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(out), "Connection refused")

	srv.Restart()
	out, err = sshCmd(t, srv, known, "echo back").CombinedOutput()
	require.NoError(t, err, string(out))
	require.Equal(t, "back\n", string(out))
}

func TestHostKeyReuse(t *testing.T) {
	a := sshdtest.Start(t, sshdtest.Options{})
	b := sshdtest.Start(t, sshdtest.Options{HostKeyFile: a.HostKeyFile})
	require.Equal(t, a.HostPublicKey, b.HostPublicKey)
	require.True(t, strings.HasPrefix(a.HostPublicKey, "ssh-ed25519 "))
	require.NotEqual(t, a.Port, b.Port)
}

func TestEncryptedClientKey(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{ClientPassphrase: "s3cret"})
	// ssh-keygen can only derive the public key with the passphrase.
	require.Error(t, exec.Command("ssh-keygen", "-y", "-P", "", "-f", srv.ClientKeyFile).Run())
	out, err := exec.Command("ssh-keygen", "-y", "-P", "s3cret", "-f", srv.ClientKeyFile).Output()
	require.NoError(t, err)
	require.Equal(t, srv.ClientPublicKey, strings.Join(strings.Fields(string(out))[:2], " "))
}
