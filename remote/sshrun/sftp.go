package sshrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pkg/sftp"
	"github.com/runbot/runbot/remote"
	"golang.org/x/crypto/ssh"
)

// An SSH runner reads files through the SFTP subsystem of its connection:
// one sftp-server process on the host serves every read for the life of
// the connection, where `cat` over a session of its own costs the host a
// session, a login shell and a process per file (about 22 ms of host CPU
// on this project's test hosts, against under 1 ms per SFTP read).
//
// The SFTP session holds one of the connection's session slots while it
// lives, so it is opened only when a slot is free at once and the runner
// has at least three (a shared shell may hold another for good, and one
// must stay for commands of their own); otherwise, and where sshd has no sftp subsystem, reads
// run `cat` (ReadFile's command), and a refusal is remembered for the
// runner. Only regular files are read this way: a FIFO or a device could
// block sftp-server, which runbot cannot kill, where a blocked cat is
// killed at its deadline like any command.

// fileSession is the SFTP client of one connection, opened once.
type fileSession struct {
	ready  chan struct{} // closed once client or err is set
	client *sftp.Client
	err    error
	// broken is set when a read timed out: sftp-server answers in order,
	// so a read stuck there would hold up every later one; the next read
	// opens a new session.
	broken atomic.Bool
}

// sftpRefusal remembers that the host's sshd offers no SFTP.
type sftpRefusal struct{ why atomic.Pointer[string] }

// FilesRefused says why file reads on this host run commands instead of
// SFTP; empty while SFTP works or was not tried.
func (s *Runner) FilesRefused() string {
	if p := s.files.why.Load(); p != nil {
		return *p
	}
	return ""
}

// ReadFile implements FileReader over SFTP. It returns ErrNoFileReader
// when SFTP is refused or no session slot is free, and a *FileError for a
// file that does not exist, is not a regular file or cannot be read.
func (s *Runner) ReadFile(ctx context.Context, path string, max int) (remote.File, error) {
	if s.files.why.Load() != nil || cap(s.sessions) < 3 {
		return remote.File{}, remote.ErrNoFileReader
	}
	start := time.Now()
	conn, err := s.use(ctx)
	if err != nil {
		return remote.File{}, err
	}
	// Reading a file is a use of the connection; one that timed out ends
	// here all the same, and its session is marked broken.
	defer s.done(conn)
	fsess, err := s.fileSession(ctx, conn)
	if err != nil {
		return remote.File{}, err
	}
	type result struct {
		f   remote.File
		err error
	}
	done := make(chan result, 1)
	go func() {
		f, err := readSFTP(fsess.client, path, max)
		done <- result{f, err}
	}()
	select {
	case r := <-done:
		if r.err == nil {
			return r.f, nil
		}
		var fe *fileProblem
		if errors.As(r.err, &fe) {
			return remote.File{}, &remote.FileError{Host: s.cfg.Name, Path: path, Reason: fe.reason}
		}
		fsess.broken.Store(true)
		return remote.File{}, fmt.Errorf("read %s on %s over sftp: %w: %w", path, s.cfg.Name, ErrConnectionLost, r.err)
	case <-ctx.Done():
		fsess.broken.Store(true)
		return remote.File{}, &remote.TimeoutError{Host: s.cfg.Name, Command: "sftp read " + path, After: time.Since(start), Cause: context.Cause(ctx)}
	}
}

// sftpChunk is the most a read request asks for: the 32 KiB every SFTP
// server must answer in one packet.
const sftpChunk = 32 << 10

// readChunks reads f to its end, or to max+1 bytes, asking for at least a
// chunk per Read. The client answers a Read in as few requests as it can
// (a chunk each, and one more that finds the end), so a small file takes
// two round trips, where
// io.ReadAll's first Reads are 512 bytes, each a round trip of its own: a
// 4 KiB script took eight, 100 KiB fifteen (five now).
// It reads to EOF whatever stat said the size was: /proc files say they
// are empty.
func readChunks(f io.Reader, max int) ([]byte, error) {
	data := make([]byte, 0, min(max+1, sftpChunk))
	for len(data) <= max {
		if len(data) == cap(data) {
			data = slices.Grow(data, min(sftpChunk, max+1-len(data)))
		}
		n, err := f.Read(data[len(data):min(cap(data), max+1)])
		data = data[:len(data)+n]
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	return data, nil
}

// fileProblem is an answer about the file itself, from the server.
type fileProblem struct{ reason string }

func (p *fileProblem) Error() string { return p.reason }

func readSFTP(c *sftp.Client, path string, max int) (remote.File, error) {
	// Stat by path, before any open: opening a FIFO blocks.
	st, err := c.Stat(path)
	if err != nil {
		return remote.File{}, sftpProblem(err)
	}
	if !st.Mode().IsRegular() {
		return remote.File{}, &fileProblem{reason: "not a regular file (" + st.Mode().Type().String() + ")"}
	}
	f, err := c.Open(path)
	if err != nil {
		return remote.File{}, sftpProblem(err)
	}
	defer func() { _ = f.Close() }() // read-only: closing loses nothing
	data, err := readChunks(f, max)
	if err != nil {
		return remote.File{}, sftpProblem(err)
	}
	out := remote.File{Data: data, ModTime: st.ModTime().UTC().Truncate(time.Second)}
	if len(data) > max {
		out.Data, out.Truncated = data[:max], true
	}
	return out, nil
}

// sftpProblem sorts an SFTP error: a status the server sent about the file
// is a fileProblem; anything else (the channel closed) is passed on.
func sftpProblem(err error) error {
	var status *sftp.StatusError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &fileProblem{reason: "no such file"}
	case errors.Is(err, fs.ErrPermission):
		return &fileProblem{reason: "permission denied"}
	case errors.As(err, &status):
		return &fileProblem{reason: status.Error()}
	case errors.Is(err, os.ErrInvalid):
		return &fileProblem{reason: err.Error()}
	}
	return err
}

// fileSession returns conn's SFTP client, opening it on first use;
// concurrent callers share one opening.
func (s *Runner) fileSession(ctx context.Context, conn *liveConn) (*fileSession, error) {
	conn.filesMu.Lock()
	fsess := conn.files
	if fsess == nil || fsess.broken.Load() {
		if fsess != nil && fsess.client != nil {
			_ = fsess.client.Close() // it is stuck or gone; a new one takes over
		}
		fsess = &fileSession{ready: make(chan struct{})}
		conn.files = fsess
		go s.openFileSession(conn, fsess)
	}
	conn.filesMu.Unlock()
	select {
	case <-fsess.ready:
	case <-ctx.Done():
		return nil, &remote.TimeoutError{Host: s.cfg.Name, Command: "open sftp", Cause: context.Cause(ctx)}
	}
	if fsess.err != nil {
		return nil, fsess.err
	}
	return fsess, nil
}

// sftpOpenTimeout bounds opening the SFTP session, which the library does
// without a context.
const sftpOpenTimeout = 15 * time.Second

func (s *Runner) openFileSession(conn *liveConn, fsess *fileSession) {
	defer close(fsess.ready)
	select {
	case s.sessions <- struct{}{}:
	default:
		// Every slot is in use: this read runs a command, the next one
		// tries again.
		fsess.err = remote.ErrNoFileReader
		fsess.broken.Store(true)
		return
	}
	var once sync.Once
	release := func() { once.Do(func() { <-s.sessions }) }
	sess, err := conn.client.NewSession()
	if err != nil {
		// The connection is going; this read runs a command, which will
		// say so, and the next one tries again.
		release()
		fsess.err = remote.ErrNoFileReader
		fsess.broken.Store(true)
		return
	}
	timer := time.AfterFunc(sftpOpenTimeout, func() { _ = sess.Close() })
	defer timer.Stop()
	client, err := openSFTP(sess)
	if err != nil {
		_ = sess.Close() // no use without the subsystem
		release()
		why := fmt.Sprintf("sftp on %s: %v", s.cfg.Name, err)
		s.files.why.CompareAndSwap(nil, &why)
		fsess.err = remote.ErrNoFileReader
		return
	}
	fsess.client = client
	go func() {
		// The slot is held until the client ends: broken, or the
		// connection gone.
		_ = client.Wait()
		_ = sess.Close()
		release()
	}()
}

// openSFTP starts the sftp subsystem on sess and its client.
func openSFTP(sess *ssh.Session) (*sftp.Client, error) {
	stdin, err := sess.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := sess.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := sess.RequestSubsystem("sftp"); err != nil {
		return nil, err
	}
	// Reads one after another: /proc files have no size to split reads by.
	return sftp.NewClientPipe(stdout, stdin, sftp.UseConcurrentReads(false))
}
