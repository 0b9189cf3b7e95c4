package sshrun_test

import (
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/runbot/runbot/internal/sshdtest"
	"github.com/runbot/runbot/remote"
	"github.com/runbot/runbot/remote/sshrun"
)

// BenchmarkSSHRun is one command on an established connection, as runbot
// runs it: a new session, the wrapper that makes timeouts killable, output
// capture and exit status.
func BenchmarkSSHRun(b *testing.B) {
	srv := sshdtest.Start(b, sshdtest.Options{})
	s, err := sshrun.New(sshrun.Config{
		Name: "bench", Address: srv.Host, Port: srv.Port, User: srv.User,
		IdentityFiles: []string{srv.ClientKeyFile}, PinnedHostKeys: []string{srv.HostPublicKey},
	})
	require.NoError(b, err)
	defer func() { _ = s.Close() }() // Runner.Close reports nothing
	ctx := b.Context()
	require.NoError(b, s.Connect(ctx))
	b.ResetTimer()
	for b.Loop() {
		out, err := s.Run(ctx, remote.Command{Line: "true"})
		if err != nil || out.ExitCode != 0 {
			b.Fatal(err, out.ExitCode)
		}
	}
}

// BenchmarkRunVsRawSession alternates runbot's Run with a bare x/crypto
// session running the same command on a connection of its own, so that
// load from elsewhere on the machine hits both alike, and reports both
// latencies and their ratio: the cost of what Run adds (the kill-on-timeout
// wrapper, capped capture, exit status) over the raw round trip.
func BenchmarkRunVsRawSession(b *testing.B) {
	srv := sshdtest.Start(b, sshdtest.Options{})
	s, err := sshrun.New(sshrun.Config{
		Name: "bench", Address: srv.Host, Port: srv.Port, User: srv.User,
		IdentityFiles: []string{srv.ClientKeyFile}, PinnedHostKeys: []string{srv.HostPublicKey},
	})
	require.NoError(b, err)
	defer func() { _ = s.Close() }() // Runner.Close reports nothing
	ctx := b.Context()
	require.NoError(b, s.Connect(ctx))
	client := rawClient(b, srv)
	defer func() { _ = client.Close() }() // benchmark cleanup
	var run, raw time.Duration
	n := 0
	for b.Loop() {
		start := time.Now()
		sess, err := client.NewSession()
		if err != nil {
			b.Fatal(err)
		}
		if err := sess.Run("true"); err != nil {
			b.Fatal(err)
		}
		_ = sess.Close() // already closed by Run (io.EOF)
		raw += time.Since(start)

		start = time.Now()
		out, err := s.Run(ctx, remote.Command{Line: "true"})
		if err != nil || out.ExitCode != 0 {
			b.Fatal(err, out.ExitCode)
		}
		run += time.Since(start)
		n++
	}
	b.ReportMetric(float64(run.Microseconds())/1000/float64(n), "run-ms/op")
	b.ReportMetric(float64(raw.Microseconds())/1000/float64(n), "raw-ms/op")
	b.ReportMetric(float64(run)/float64(raw), "run/raw")
}

// BenchmarkSSHConnect is a full connection: TCP, key exchange, host key
// check, public key login. It also reports the heap one idle connection
// keeps.
func BenchmarkSSHConnect(b *testing.B) {
	srv := sshdtest.Start(b, sshdtest.Options{Config: []string{"MaxStartups 1000"}})
	cfg := sshrun.Config{
		Name: "bench", Address: srv.Host, Port: srv.Port, User: srv.User,
		IdentityFiles: []string{srv.ClientKeyFile}, PinnedHostKeys: []string{srv.HostPublicKey},
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var open []*sshrun.Runner
	for b.Loop() {
		s, err := sshrun.New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Connect(b.Context()); err != nil {
			b.Fatal(err)
		}
		open = append(open, s)
	}
	b.StopTimer()
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapInuse-before.HeapInuse)/float64(len(open)), "heap-B/conn")
	for _, s := range open {
		_ = s.Close() // Runner.Close reports nothing
	}
}

func rawClient(b *testing.B, srv *sshdtest.Server) *ssh.Client {
	b.Helper()
	pem, err := os.ReadFile(srv.ClientKeyFile)
	require.NoError(b, err)
	signer, err := ssh.ParsePrivateKey(pem)
	require.NoError(b, err)
	hostKey, _, _, _, err := ssh.ParseAuthorizedKey([]byte(srv.HostPublicKey))
	require.NoError(b, err)
	client, err := ssh.Dial("tcp", srv.Addr, &ssh.ClientConfig{
		User: srv.User, Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: ssh.FixedHostKey(hostKey),
	})
	require.NoError(b, err)
	return client
}
