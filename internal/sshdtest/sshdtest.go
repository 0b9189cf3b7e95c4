// Package sshdtest starts a real OpenSSH sshd on a free loopback port for
// tests, with a throwaway host key and an authorized client key, and can
// take it down or cut its connections to play a failing host.
//
// It needs the Debian package openssh-server (/usr/sbin/sshd and
// ssh-keygen) and must run as root, as sshd's privilege separation does.
package sshdtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runbot/runbot/internal/proctest"
)

// SSHD is where the server binary is looked for.
const SSHD = "/usr/sbin/sshd"

// startTimeout bounds how long sshd may take to start listening.
const startTimeout = 15 * time.Second

// Options tune a server; the zero value is a plain server with fresh keys.
type Options struct {
	// HostKeyFile reuses an existing private host key (e.g. another
	// Server's HostKeyFile) instead of generating one.
	HostKeyFile string
	// ClientPassphrase encrypts the generated client key.
	ClientPassphrase string
	// AuthorizedKeys are extra authorized_keys lines, besides the generated
	// client key.
	AuthorizedKeys []string
	// Config lines go before the defaults in sshd_config, so they override
	// them (sshd keeps the first value it reads), e.g. "MaxSessions 3".
	Config []string
	// Port is the port to listen on; 0 picks a free one.
	Port int
}

// Server is a running sshd.
type Server struct {
	// Addr is "127.0.0.1:port"; Host and Port are its parts.
	Addr string
	Host string
	Port int
	// User is the account to log in as: the one the test runs as.
	User string
	// Dir holds the server's keys, config and log.
	Dir string
	// ClientKeyFile is an authorized private key (OpenSSH format),
	// encrypted when Options.ClientPassphrase was set.
	ClientKeyFile string
	// ClientPublicKey is its authorized_keys line.
	ClientPublicKey string
	// HostKeyFile is the server's private host key, for Options.HostKeyFile.
	HostKeyFile string
	// HostPublicKey is the host key as an authorized_keys line
	// ("ssh-ed25519 AAAA…"), the form an inventory pins.
	HostPublicKey string

	t       testing.TB
	config  string
	logFile string
	cmd     *exec.Cmd
	exited  chan struct{}
}

// Start starts an sshd and stops it when the test ends. It fails the test
// (naming the Debian package to install) when sshd cannot run.
func Start(tb testing.TB, opts Options) *Server {
	tb.Helper()
	if _, err := os.Stat(SSHD); err != nil {
		tb.Fatalf("sshdtest: %s not found: install the Debian package openssh-server (%v)", SSHD, err)
	}
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		tb.Fatalf("sshdtest: ssh-keygen not found: install the Debian package openssh-client (%v)", err)
	}
	// sshd refuses to start without its privilege separation directory,
	// which only the packaged service creates.
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		tb.Fatalf("sshdtest: create /run/sshd: %v", err)
	}
	u, err := user.Current()
	if err != nil {
		tb.Fatalf("sshdtest: current user: %v", err)
	}
	s := &Server{t: tb, Host: "127.0.0.1", User: u.Username, Dir: tb.TempDir()}
	s.HostKeyFile = opts.HostKeyFile
	if s.HostKeyFile == "" {
		s.HostKeyFile = filepath.Join(s.Dir, "host_key")
		keygen(tb, s.HostKeyFile, "")
	}
	s.HostPublicKey = publicKey(tb, s.HostKeyFile)
	s.ClientKeyFile = filepath.Join(s.Dir, "client_key")
	keygen(tb, s.ClientKeyFile, opts.ClientPassphrase)
	s.ClientPublicKey = readPub(tb, s.ClientKeyFile+".pub")
	auth := strings.Join(append([]string{s.ClientPublicKey}, opts.AuthorizedKeys...), "\n") + "\n"
	if err := os.WriteFile(filepath.Join(s.Dir, "authorized_keys"), []byte(auth), 0o600); err != nil {
		tb.Fatalf("sshdtest: %v", err)
	}
	s.logFile = filepath.Join(s.Dir, "sshd.log")
	s.config = filepath.Join(s.Dir, "sshd_config")

	// A free port can be taken by someone else between our probe and sshd's
	// bind, so a picked port is retried a few times.
	for attempt := 0; ; attempt++ {
		s.Port = opts.Port
		if s.Port == 0 {
			s.Port = freePort(tb)
		}
		s.Addr = net.JoinHostPort(s.Host, strconv.Itoa(s.Port))
		s.writeConfig(tb, opts)
		err := s.start()
		if err == nil {
			break
		}
		if opts.Port != 0 || attempt == 4 || !strings.Contains(s.Log(), "Address already in use") {
			tb.Fatalf("sshdtest: %v\nsshd log:\n%s", err, s.Log())
		}
	}
	tb.Cleanup(s.Stop)
	return s
}

func (s *Server) writeConfig(tb testing.TB, opts Options) {
	tb.Helper()
	lines := append([]string{}, opts.Config...)
	lines = append(lines,
		"Port "+strconv.Itoa(s.Port),
		"ListenAddress "+s.Host,
		"HostKey "+s.HostKeyFile,
		"PidFile "+filepath.Join(s.Dir, "sshd.pid"),
		"AuthorizedKeysFile "+filepath.Join(s.Dir, "authorized_keys"),
		"PubkeyAuthentication yes",
		"PasswordAuthentication no",
		"KbdInteractiveAuthentication no",
		"PermitRootLogin prohibit-password",
		"UsePAM no",
		// Keys live under the test's temp dir, which StrictModes rejects.
		"StrictModes no",
		"AllowTcpForwarding yes",
		"AllowStreamLocalForwarding yes",
		// Tests fan out to many "hosts" that are this one server.
		"MaxStartups 200",
		"LogLevel VERBOSE",
		// Keep the machine's login scripts out of tests: bash sources
		// ~/.bashrc for commands run by sshd only at shell level 1, and a
		// heavy one (pyenv, cargo) would make every command slow.
		"SetEnv SHLVL=1",
	)
	if err := os.WriteFile(s.config, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		tb.Fatalf("sshdtest: %v", err)
	}
}

// start runs sshd and waits until it listens.
func (s *Server) start() error {
	log, err := os.OpenFile(s.logFile, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer func() { _ = log.Close() }() // sshd has its own copy of the descriptor
	// Not the test's context: sshd must outlive it, as the cleanup that
	// stops it (Stop, process group and connections) runs after that
	// context ends.
	cmd := exec.CommandContext(context.Background(), SSHD, "-D", "-e", "-f", s.config)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start sshd: %w", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait() // sshd is killed on purpose; how it ended does not matter
		close(exited)
	}()
	s.cmd, s.exited = cmd, exited
	want := fmt.Sprintf("Server listening on %s port %d", s.Host, s.Port)
	deadline := time.Now().Add(startTimeout)
	for !strings.Contains(s.Log(), want) {
		select {
		case <-exited:
			return fmt.Errorf("sshd exited before listening on %s", s.Addr)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.kill()
			return fmt.Errorf("sshd did not listen on %s within %s", s.Addr, startTimeout)
		}
	}
	return nil
}

// Log returns what sshd has logged, for failure messages.
func (s *Server) Log() string {
	b, _ := os.ReadFile(s.logFile)
	return string(b)
}

// KnownHostsLine is the server's known_hosts entry.
func (s *Server) KnownHostsLine() string {
	return fmt.Sprintf("[%s]:%d %s", s.Host, s.Port, s.HostPublicKey)
}

// KnownHostsFile writes a known_hosts file that knows this server (and the
// extra lines given) and returns its path.
func (s *Server) KnownHostsFile(tb testing.TB, extra ...string) string {
	tb.Helper()
	p := filepath.Join(tb.TempDir(), "known_hosts")
	body := strings.Join(append([]string{s.KnownHostsLine()}, extra...), "\n") + "\n"
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		tb.Fatalf("sshdtest: %v", err)
	}
	return p
}

// DropConnections kills the server processes of every open connection, as
// a network failure would, while the server keeps accepting new ones.
// Commands those connections started keep running.
func (s *Server) DropConnections() {
	if s.cmd == nil {
		return
	}
	for _, pid := range proctest.Children(s.cmd.Process.Pid) {
		// Each connection's sshd leads its own process group (sshd calls
		// setsid), which holds its privilege-separated child too. Either may
		// have gone already.
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// Stop kills sshd and all its connections, like a host going down. It is
// safe to call more than once; Restart brings the server back.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	s.DropConnections()
	s.kill()
}

func (s *Server) kill() {
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL) // it may have exited already; exited tells
	<-s.exited
	s.cmd = nil
}

// Restart starts a stopped server again on the same address with the same
// keys.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	if err := s.start(); err != nil {
		s.t.Fatalf("sshdtest: restart: %v\nsshd log:\n%s", err, s.Log())
	}
}

func keygen(tb testing.TB, path, passphrase string) {
	tb.Helper()
	// Two KDF rounds instead of 16: the key is still really encrypted, but
	// decrypting it does not dominate a test run under the race detector.
	out, err := exec.CommandContext(tb.Context(), "ssh-keygen", "-q", "-t", "ed25519", "-a", "2", "-N", passphrase, "-C", "sshdtest", "-f", path).CombinedOutput()
	if err != nil {
		tb.Fatalf("sshdtest: ssh-keygen %s: %v: %s", path, err, out)
	}
}

// publicKey derives the public half of a private key, as "type base64".
func publicKey(tb testing.TB, private string) string {
	tb.Helper()
	if _, err := os.Stat(private + ".pub"); err == nil {
		return readPub(tb, private+".pub")
	}
	out, err := exec.CommandContext(tb.Context(), "ssh-keygen", "-y", "-f", private).Output()
	if err != nil {
		tb.Fatalf("sshdtest: ssh-keygen -y %s: %v", private, err)
	}
	return firstTwoFields(string(out))
}

func readPub(tb testing.TB, path string) string {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("sshdtest: %v", err)
	}
	return firstTwoFields(string(b))
}

func firstTwoFields(s string) string {
	f := strings.Fields(s)
	if len(f) < 2 {
		return strings.TrimSpace(s)
	}
	return f[0] + " " + f[1]
}

func freePort(tb testing.TB) int {
	tb.Helper()
	l, err := (&net.ListenConfig{}).Listen(tb.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("sshdtest: find a free port: %v", err)
	}
	defer func() { _ = l.Close() }() // only the port was wanted
	return l.Addr().(*net.TCPAddr).Port
}
