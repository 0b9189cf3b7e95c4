package sshrun

import (
	"bufio"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/runbot/runbot/remote"
	"golang.org/x/crypto/ssh"
)

// maxReadyScan bounds how much a login script may print before the
// driver's ready line.
const maxReadyScan = 64 << 10

// pollInterval is how often the driver is asked for jobs that ended
// without their EXIT trap (killed by a signal, or exec'd): the longest such
// a command's end can go unnoticed. stopPollInterval is the same while a
// timed-out command is being killed, when its end is expected at once.
const (
	pollInterval     = time.Second
	stopPollInterval = 20 * time.Millisecond
)

// shellSession is one running driver: its session, the jobs in flight and
// the frames asked for.
type shellSession struct {
	host  string
	sess  *ssh.Session
	stdin io.WriteCloser
	// setsid says jobs lead their own process group; pid is the driver's.
	setsid bool
	pid    int
	// release gives back the session slot taken on the SSH runner and ends
	// the shell's use of the connection.
	release func()

	// wmu serialises request lines on stdin.
	wmu sync.Mutex

	mu     sync.Mutex
	nextID uint64
	jobs   map[uint64]*shellJob
	// running counts jobs whose end has not been heard of, so that the
	// driver is polled only while there are some.
	running int

	dead    chan struct{}
	dieOnce sync.Once
	deadWhy error
	tailMu  sync.Mutex
	// stderrTail keeps the last lines on stderr that were not notices, to
	// explain a driver that failed.
	stderrTail []string
}

// shellJob is one command in flight.
type shellJob struct {
	id    uint64
	fin   chan struct{} // closed once its end is heard of
	out   chan jobFrame // receives once, after a get
	ended bool          // guarded by shellSession.mu
	// limit is how many bytes of each stream the get asked for.
	limit int
}

type jobFrame struct {
	rc             int
	stdout, stderr []byte
}

// openShellSession starts the driver on a new session of r's connection.
func openShellSession(ctx context.Context, r *Runner) (*shellSession, error) {
	host := r.cfg.Name
	select {
	case r.sessions <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("open shell on %s: %w", host, context.Cause(ctx))
	}
	var once sync.Once
	slot := func() { once.Do(func() { <-r.sessions }) }
	sess, conn, err := r.openSession(ctx)
	if err != nil {
		slot()
		return nil, err
	}
	// The shell is a use of the connection for as long as it lives.
	release := sync.OnceFunc(func() {
		slot()
		r.done(conn)
	})
	ss, err := startDriver(ctx, host, sess, release)
	if err != nil {
		_ = sess.Close() // the driver failed; its session is of no use
		release()
		return nil, err
	}
	return ss, nil
}

func startDriver(ctx context.Context, host string, sess *ssh.Session, release func()) (*shellSession, error) {
	stdin, err := sess.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("start shell on %s: %w", host, err)
	}
	stdout, err := sess.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("start shell on %s: %w", host, err)
	}
	stderr, err := sess.StderrPipe()
	if err != nil {
		return nil, fmt.Errorf("start shell on %s: %w", host, err)
	}
	ss := &shellSession{host: host, sess: sess, stdin: stdin, jobs: map[uint64]*shellJob{}, dead: make(chan struct{}), release: release}
	// Start and the ready line wait on the server without a context;
	// closing the session is what interrupts them.
	closeOnExpiry := context.AfterFunc(ctx, func() { _ = sess.Close() })
	defer closeOnExpiry()
	if err := sess.Start(shellLine()); err != nil {
		return nil, fmt.Errorf("start shell on %s: %w", host, err)
	}
	go ss.readNotices(stderr)
	out := bufio.NewReader(stdout)
	ss.setsid, ss.pid, err = readReady(out)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("start shell on %s: %w", host, context.Cause(ctx))
		}
		return nil, fmt.Errorf("start shell on %s: the driver did not start: %w%s", host, err, ss.tail())
	}
	go ss.readFrames(out)
	go ss.pollWhileRunning()
	go func() {
		if err := sess.Wait(); err != nil {
			ss.die(fmt.Errorf("the shell session ended: %w", err))
		} else {
			ss.die(errors.New("the shell session ended"))
		}
	}()
	return ss, nil
}

// readReady skips what login scripts print and reads the ready line.
func readReady(r *bufio.Reader) (setsid bool, pid int, err error) {
	read := 0
	for read < maxReadyScan {
		line, err := r.ReadString('\n')
		read += len(line)
		if err != nil {
			return false, 0, fmt.Errorf("reading its ready line: %w", err)
		}
		f := strings.Fields(line)
		if len(f) == 3 && f[0] == shellReadyTag {
			pid, err := strconv.Atoi(f[2])
			if err != nil || pid <= 1 {
				return false, 0, fmt.Errorf("its ready line names no pid: %q", line)
			}
			return f[1] == "1", pid, nil
		}
	}
	return false, 0, fmt.Errorf("no ready line in the first %d bytes of output", maxReadyScan)
}

func (ss *shellSession) isDead() bool {
	select {
	case <-ss.dead:
		return true
	default:
		return false
	}
}

// die ends the session once: every job waiting sees dead closed.
func (ss *shellSession) die(why error) {
	ss.dieOnce.Do(func() {
		ss.deadWhy = why
		close(ss.dead)
		_ = ss.sess.Close() // it is gone or going; the close adds nothing
		ss.release()
	})
}

// close ends the driver: stdin's EOF ends its loop, and the session is
// closed in case it does not.
func (ss *shellSession) close() {
	_ = ss.stdin.Close() // the session may already be gone
	ss.die(errors.New("the shell was closed"))
}

// lost is the error of a command whose session died under it.
func (ss *shellSession) lost() error {
	return fmt.Errorf("run command on %s: %w: %w", ss.host, ErrConnectionLost, ss.deadWhy)
}

// send writes one request line.
func (ss *shellSession) send(line string) error {
	ss.wmu.Lock()
	defer ss.wmu.Unlock()
	if _, err := io.WriteString(ss.stdin, line); err != nil {
		ss.die(fmt.Errorf("writing to the shell: %w", err))
		return ss.lost()
	}
	return nil
}

// start registers a job and asks the driver to run it.
func (ss *shellSession) start(line string) (*shellJob, error) {
	ss.mu.Lock()
	ss.nextID++
	j := &shellJob{id: ss.nextID, fin: make(chan struct{}), out: make(chan jobFrame, 1)}
	ss.jobs[j.id] = j
	ss.running++
	ss.mu.Unlock()
	if err := ss.send(runRequest(j.id, ss.pid, line)); err != nil {
		return nil, err
	}
	return j, nil
}

// ended records that a job's end was heard of; repeats are ignored.
func (ss *shellSession) ended(id uint64) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	j := ss.jobs[id]
	if j == nil || j.ended {
		return
	}
	j.ended = true
	ss.running--
	close(j.fin)
}

// pollWhileRunning asks the driver, while jobs run, for those that ended
// without a word.
func (ss *shellSession) pollWhileRunning() {
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		select {
		case <-ss.dead:
			return
		case <-t.C:
		}
		ss.mu.Lock()
		running := ss.running
		ss.mu.Unlock()
		if running > 0 && ss.send(pollRequest) != nil {
			return
		}
	}
}

// fetch reaps a finished job and returns its output, capped at max per
// stream. The driver is asked for one byte more than the cap, so that a
// stream longer than it is known to be truncated.
func (ss *shellSession) fetch(ctx context.Context, j *shellJob, max int) (remote.Output, error) {
	ss.mu.Lock()
	j.limit = max + 1
	ss.mu.Unlock()
	if err := ss.send(getRequest(j.id, max+1)); err != nil {
		return remote.Output{}, err
	}
	select {
	case f := <-j.out:
		out := remote.Output{ExitCode: f.rc}
		out.Stdout, out.StdoutTruncated = capped(f.stdout, max)
		out.Stderr, out.StderrTruncated = capped(f.stderr, max)
		return out, nil
	case <-ss.dead:
		return remote.Output{}, ss.lost()
	case <-ctx.Done():
		return remote.Output{}, fmt.Errorf("collect output on %s: %w", ss.host, context.Cause(ctx))
	}
}

// capped cuts b at max and marks it as remote.CapWriter does.
func capped(b []byte, max int) ([]byte, bool) {
	if len(b) > max {
		return append(b[:max:max], remote.TruncationMarker...), true
	}
	return b, false
}

// stop kills a timed-out job's process tree through the driver, then
// collects what it wrote. It is bounded by stopTimeout, independent of the
// caller's expired ctx.
func (ss *shellSession) stop(j *shellJob, max int) (remote.Output, error) {
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	if err := ss.send(killRequest(j.id)); err != nil {
		return remote.Output{}, fmt.Errorf("stop command on %s: %w; it may still be running", ss.host, err)
	}
	// A killed job runs no EXIT trap: ask until the driver sees it dead.
	t := time.NewTicker(stopPollInterval)
	defer t.Stop()
	for {
		select {
		case <-j.fin:
			out, err := ss.fetch(ctx, j, max)
			if err != nil {
				return out, fmt.Errorf("stop command on %s: %w", ss.host, err)
			}
			return out, nil
		case <-ss.dead:
			return remote.Output{}, ss.lost()
		case <-ctx.Done():
			return remote.Output{}, fmt.Errorf("stop command on %s: it did not end after the kill; it may still be running", ss.host)
		case <-t.C:
			if err := ss.send(pollRequest); err != nil {
				return remote.Output{}, err
			}
		}
	}
}

// readNotices reads the driver's stderr: "fin ID" notices, and anything
// else (the driver's own errors) kept for diagnosis.
func (ss *shellSession) readNotices(r io.Reader) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if f := strings.Fields(line); len(f) == 2 && f[0] == "fin" {
			if id, err := strconv.ParseUint(f[1], 10, 64); err == nil {
				ss.ended(id)
				continue
			}
		}
		ss.tailMu.Lock()
		ss.stderrTail = append(ss.stderrTail, line)
		if len(ss.stderrTail) > 10 {
			ss.stderrTail = ss.stderrTail[1:]
		}
		ss.tailMu.Unlock()
	}
	ss.die(errors.New("the shell's stderr ended"))
}

func (ss *shellSession) tail() string {
	ss.tailMu.Lock()
	defer ss.tailMu.Unlock()
	if len(ss.stderrTail) == 0 {
		return ""
	}
	return ": " + strings.Join(ss.stderrTail, "; ")
}

// readFrames reads the frames the driver writes in answer to gets. A frame
// that does not parse means the stream can no longer be trusted, so the
// session is ended.
func (ss *shellSession) readFrames(r *bufio.Reader) {
	for {
		if err := ss.readFrame(r); err != nil {
			ss.die(err)
			return
		}
	}
}

func (ss *shellSession) readFrame(r *bufio.Reader) error {
	head, err := r.ReadString('\n')
	if err != nil {
		return fmt.Errorf("the shell's stdout ended: %w", err)
	}
	f := strings.Fields(head)
	if len(f) != 3 || f[0] != "out" {
		return fmt.Errorf("the shell wrote %q where a frame should start", head)
	}
	id, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return fmt.Errorf("the shell framed output for job %q", f[1])
	}
	rc, err := strconv.Atoi(f[2])
	if err != nil {
		return fmt.Errorf("the shell gave job %d the exit status %q", id, f[2])
	}
	ss.mu.Lock()
	j := ss.jobs[id]
	limit := 0
	if j != nil {
		limit = j.limit
	}
	ss.mu.Unlock()
	if j == nil {
		return fmt.Errorf("the shell framed output for unknown job %d", id)
	}
	stdout, err := readHex(r, "err", limit)
	if err != nil {
		return fmt.Errorf("reading the stdout of job %d: %w", id, err)
	}
	stderr, err := readHex(r, "end "+f[1], limit)
	if err != nil {
		return fmt.Errorf("reading the stderr of job %d: %w", id, err)
	}
	ss.mu.Lock()
	delete(ss.jobs, id)
	ss.mu.Unlock()
	j.out <- jobFrame{rc: rc, stdout: stdout, stderr: stderr} // buffered, and one get per job
	return nil
}

// readHex decodes od hex lines up to the line end, and refuses more than
// limit bytes: the driver never sends more than it was asked for.
func readHex(r *bufio.Reader, end string, limit int) ([]byte, error) {
	var out []byte
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		line = strings.TrimSuffix(line, "\n")
		if line == end {
			return out, nil
		}
		for _, h := range strings.Fields(line) {
			b, err := hex.DecodeString(h)
			if err != nil || len(b) != 1 {
				return nil, fmt.Errorf("%q is not an od hex line", line)
			}
			out = append(out, b[0])
		}
		if len(out) > limit {
			return nil, fmt.Errorf("more than the %d bytes asked for", limit)
		}
	}
}
