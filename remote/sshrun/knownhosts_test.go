package sshrun_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/runbot/runbot/internal/shell"
	"github.com/runbot/runbot/internal/sshdtest"
	"github.com/runbot/runbot/remote"
	"github.com/runbot/runbot/remote/sshrun"
)

// fingerprint is the host key's fingerprint as ssh-keygen shows it, which
// is what an operator compares against.
func fingerprint(t *testing.T, srv *sshdtest.Server) string {
	t.Helper()
	out, err := exec.Command("ssh-keygen", "-l", "-f", srv.HostKeyFile+".pub").Output()
	require.NoError(t, err)
	return strings.Fields(string(out))[1]
}

// otherKey is an authorized_keys line for a key no server has.
func otherKey(t *testing.T) string {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	k, err := ssh.NewPublicKey(pub)
	require.NoError(t, err)
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k)))
}

func TestHostKeyVerification(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{})
	emptyFile := func(t *testing.T) []string {
		t.Helper()
		return []string{filepath.Join(t.TempDir(), "known_hosts")}
	}
	cases := []struct {
		name      string
		configure func(t *testing.T, c *sshrun.Config)
		kind      sshrun.HostKeyKind // "" means the connection must succeed
		message   []string
	}{
		{
			name:      "known host",
			configure: func(_ *testing.T, c *sshrun.Config) {},
		},
		{
			name: "unknown host is refused",
			configure: func(t *testing.T, c *sshrun.Config) {
				t.Helper()
				c.KnownHostsFiles = emptyFile(t)
			},
			kind:    sshrun.HostKeyUnknown,
			message: []string{"is unknown", "known_hosts (missing)", "trust on first use", "nothing was run"},
		},
		{
			name: "changed key is refused",
			configure: func(t *testing.T, c *sshrun.Config) {
				t.Helper()
				c.KnownHostsFiles = []string{writeFile(t, "known_hosts", "# old key\n[127.0.0.1]:"+portOf(srv)+" "+otherKey(t)+"\n")}
			},
			kind:    sshrun.HostKeyChanged,
			message: []string{"CHANGED", "known_hosts:2", "man-in-the-middle"},
		},
		{
			name: "changed key is refused even with trust on first use",
			configure: func(t *testing.T, c *sshrun.Config) {
				t.Helper()
				c.KnownHostsFiles = []string{writeFile(t, "known_hosts", "[127.0.0.1]:"+portOf(srv)+" "+otherKey(t)+"\n")}
				c.TrustOnFirstUse = true
			},
			kind: sshrun.HostKeyChanged,
		},
		{
			name: "pinned key is accepted without known_hosts",
			configure: func(t *testing.T, c *sshrun.Config) {
				t.Helper()
				c.KnownHostsFiles = emptyFile(t)
				c.PinnedHostKeys = []string{otherKey(t), srv.HostPublicKey}
			},
		},
		{
			name: "pinned key wins over known_hosts",
			configure: func(t *testing.T, c *sshrun.Config) {
				t.Helper()
				c.PinnedHostKeys = []string{otherKey(t)}
			},
			kind:    sshrun.HostKeyChanged,
			message: []string{"pinned: ssh-ed25519 SHA256:"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := hostConfig(t, srv)
			tc.configure(t, &cfg)
			canary := filepath.Join(t.TempDir(), "ran")

			_, err := newSSH(t, cfg).Run(testCtx(t), remote.Command{Line: shell.Join("touch", canary)})

			if tc.kind == "" {
				require.NoError(t, err)
				require.FileExists(t, canary)
				return
			}
			var herr *sshrun.HostKeyError
			require.ErrorAs(t, err, &herr)
			require.Equal(t, tc.kind, herr.Kind)
			require.Equal(t, "web1", herr.Host)
			require.Equal(t, srv.Addr, herr.Address)
			require.Equal(t, fingerprint(t, srv), herr.Fingerprint)
			require.Contains(t, err.Error(), "web1")
			require.Contains(t, err.Error(), fingerprint(t, srv))
			for _, m := range tc.message {
				require.Contains(t, err.Error(), m)
			}
			require.NoFileExists(t, canary, "nothing may run on an unverified host")
		})
	}
}

func TestTrustOnFirstUseRecordsKey(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{})
	known := filepath.Join(t.TempDir(), "ssh", "known_hosts")
	cfg := hostConfig(t, srv)
	cfg.KnownHostsFiles = []string{known}
	cfg.TrustOnFirstUse = true

	_, err := newSSH(t, cfg).Run(testCtx(t), remote.Command{Line: "true"})
	require.NoError(t, err)

	// The recorded file is one OpenSSH itself accepts.
	out, err := exec.Command("ssh-keygen", "-F", "[127.0.0.1]:"+portOf(srv), "-f", known).Output()
	require.NoError(t, err, "ssh-keygen does not find the recorded key")
	require.Contains(t, string(out), srv.HostPublicKey)

	// Without TOFU, the recorded key now suffices.
	cfg.TrustOnFirstUse = false
	_, err = newSSH(t, cfg).Run(testCtx(t), remote.Command{Line: "true"})
	require.NoError(t, err)
}

// TestHostKeyAlgorithmFollowsKnownKey gives the server two host keys and
// known_hosts only one of them, each way round: the client must ask for the
// known one rather than refuse the other as "changed".
func TestHostKeyAlgorithmFollowsKnownKey(t *testing.T) {
	dir := t.TempDir()
	ecdsa := filepath.Join(dir, "host_ecdsa")
	out, err := exec.Command("ssh-keygen", "-q", "-t", "ecdsa", "-N", "", "-f", ecdsa).CombinedOutput()
	require.NoError(t, err, string(out))
	srv := sshdtest.Start(t, sshdtest.Options{Config: []string{"HostKey " + ecdsa}})
	ecdsaPub := strings.Join(strings.Fields(readFile(t, ecdsa+".pub"))[:2], " ")

	for name, key := range map[string]string{"ed25519": srv.HostPublicKey, "ecdsa": ecdsaPub} {
		t.Run(name, func(t *testing.T) {
			cfg := hostConfig(t, srv)
			cfg.KnownHostsFiles = []string{writeFile(t, "known_hosts", "[127.0.0.1]:"+portOf(srv)+" "+key+"\n")}
			_, err := newSSH(t, cfg).Run(testCtx(t), remote.Command{Line: "true"})
			require.NoError(t, err)

			cfg.KnownHostsFiles = nil
			cfg.PinnedHostKeys = []string{key}
			_, err = newSSH(t, cfg).Run(testCtx(t), remote.Command{Line: "true"})
			require.NoError(t, err)
		})
	}
}

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
	return p
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return string(b)
}

func portOf(srv *sshdtest.Server) string {
	_, p, _ := strings.Cut(srv.Addr, ":")
	return p
}
