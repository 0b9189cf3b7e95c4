package sshrun_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/runbot/runbot/internal/sshdtest"
	"github.com/runbot/runbot/remote"
	"github.com/runbot/runbot/remote/sshrun"
)

func TestPassphraseProtectedKey(t *testing.T) {
	const secret = "correct horse battery staple"
	srv := sshdtest.Start(t, sshdtest.Options{ClientPassphrase: secret})
	cases := []struct {
		name      string
		configure func(t *testing.T, c *sshrun.Config)
		wantErr   string
	}{
		{
			name: "from environment",
			configure: func(t *testing.T, c *sshrun.Config) {
				t.Helper()
				t.Setenv("RUNBOT_TEST_PASSPHRASE", secret)
				c.PassphraseEnv = "RUNBOT_TEST_PASSPHRASE"
			},
		},
		{
			name: "from file",
			configure: func(t *testing.T, c *sshrun.Config) {
				t.Helper()
				c.PassphraseFile = writeFile(t, "passphrase", secret+"\n")
			},
		},
		{
			name:      "missing",
			configure: func(_ *testing.T, c *sshrun.Config) {},
			wantErr:   "is encrypted: no passphrase is configured",
		},
		{
			name: "unset variable",
			configure: func(t *testing.T, c *sshrun.Config) {
				t.Helper()
				c.PassphraseEnv = "RUNBOT_TEST_PASSPHRASE_UNSET"
			},
			wantErr: "RUNBOT_TEST_PASSPHRASE_UNSET is not set",
		},
		{
			name: "wrong",
			configure: func(t *testing.T, c *sshrun.Config) {
				t.Helper()
				t.Setenv("RUNBOT_TEST_PASSPHRASE", "hunter2-wrong")
				c.PassphraseEnv = "RUNBOT_TEST_PASSPHRASE"
			},
			wantErr: "wrong passphrase?",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := hostConfig(t, srv)
			tc.configure(t, &cfg)
			out, err := newSSH(t, cfg).Run(testCtx(t), remote.Command{Line: "echo in"})
			if tc.wantErr == "" {
				require.NoError(t, err)
				require.Equal(t, "in\n", string(out.Stdout))
				return
			}
			require.ErrorContains(t, err, tc.wantErr)
			require.ErrorContains(t, err, srv.ClientKeyFile, "the error names the key file")
			require.NotContains(t, err.Error(), secret)
			require.NotContains(t, err.Error(), "hunter2")
		})
	}
}

func TestAgentKeys(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{})
	pem, err := os.ReadFile(srv.ClientKeyFile)
	require.NoError(t, err)
	key, err := ssh.ParseRawPrivateKey(pem)
	require.NoError(t, err)
	keyring := agent.NewKeyring()
	require.NoError(t, keyring.Add(agent.AddedKey{PrivateKey: key}))
	sock := filepath.Join(t.TempDir(), "agent.sock")
	l, err := net.Listen("unix", sock)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() }) // test cleanup
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = c.Close() }()
				_ = agent.ServeAgent(keyring, c) // returns when the client hangs up
			}()
		}
	}()
	t.Setenv("SSH_AUTH_SOCK", sock)
	cfg := hostConfig(t, srv)
	cfg.IdentityFiles = nil
	cfg.UseAgent = true

	out, err := newSSH(t, cfg).Run(testCtx(t), remote.Command{Line: "echo agent"})
	require.NoError(t, err)
	require.Equal(t, "agent\n", string(out.Stdout))
}

// TestUserCertificate logs in with a key that is not in authorized_keys but
// carries a certificate from a CA the server trusts.
func TestUserCertificate(t *testing.T) {
	dir := t.TempDir()
	ca, userKey := filepath.Join(dir, "ca"), filepath.Join(dir, "user")
	sshKeygen(t, "-q", "-t", "ed25519", "-N", "", "-f", ca)
	sshKeygen(t, "-q", "-t", "ed25519", "-N", "", "-f", userKey)
	srv := sshdtest.Start(t, sshdtest.Options{Config: []string{"TrustedUserCAKeys " + ca + ".pub"}})
	cfg := hostConfig(t, srv)
	cfg.IdentityFiles = []string{userKey}

	// Without a certificate the key is refused...
	_, err := newSSH(t, cfg).Run(testCtx(t), remote.Command{Line: "true"})
	require.ErrorContains(t, err, "unable to authenticate")

	// ...and with one next to it, it is let in.
	sshKeygen(t, "-q", "-s", ca, "-I", "runbot-test", "-n", srv.User, userKey+".pub")
	require.FileExists(t, userKey+"-cert.pub")
	_, err = newSSH(t, cfg).Run(testCtx(t), remote.Command{Line: "true"})
	require.NoError(t, err)
}

func sshKeygen(t *testing.T, args ...string) {
	t.Helper()
	out, err := exec.Command("ssh-keygen", args...).CombinedOutput()
	require.NoError(t, err, string(out))
}
