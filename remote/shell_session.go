package remote

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/crypto/ssh"
)

// maxReadyScan bounds how much a login script may print before the
// driver's ready line.
const maxReadyScan = 64 << 10

// shellSession is one running driver: its session, the jobs in flight and
// the frames asked for.
type shellSession struct {
	host  string
	sess  *ssh.Session
	stdin io.WriteCloser
	// setsid says jobs lead their own process group.
	setsid bool
	// release gives back the session slot taken on the SSH runner.
	release func()

	// wmu serialises request lines on stdin.
	wmu sync.Mutex

	mu     sync.Mutex
	nextID uint64
	jobs   map[uint64]*shellJob

	dead     chan struct{}
	dieOnce  sync.Once
	deadWhy  error
	stderrMu sync.Mutex
	// stderrTail keeps the last lines on stderr that were not notices, to
	// explain a driver that failed.
	stderrTail []string
}

// shellJob is one command in flight.
type shellJob struct {
	id   uint64
	pid  chan int      // receives once
	done chan jobDone  // receives once
	out  chan jobFrame // receives once, after a get
	// outLen and errLen are the byte counts asked for by the get.
	outLen, errLen int64
}

type jobDone struct {
	rc               int
	outSize, errSize int64
}

type jobFrame struct {
	stdout, stderr []byte
}

// openShellSession starts the driver on a new session of r's connection.
func openShellSession(ctx context.Context, r *SSH) (*shellSession, error) {
	host := r.cfg.Name
	select {
	case r.sessions <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("open shell on %s: %w", host, context.Cause(ctx))
	}
	var once sync.Once
	release := func() { once.Do(func() { <-r.sessions }) }
	sess, _, err := r.openSession(ctx)
	if err != nil {
		release()
		return nil, err
	}
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
	setsid, err := readReady(out)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("start shell on %s: %w", host, context.Cause(ctx))
		}
		return nil, fmt.Errorf("start shell on %s: the driver did not start: %w%s", host, err, ss.tail())
	}
	ss.setsid = setsid
	go ss.readFrames(out)
	go func() {
		err := sess.Wait()
		ss.die(fmt.Errorf("the shell session ended: %v", err))
	}()
	return ss, nil
}

// readReady skips what login scripts print and reads the ready line.
func readReady(r *bufio.Reader) (setsid bool, err error) {
	read := 0
	for read < maxReadyScan {
		line, err := r.ReadString('\n')
		read += len(line)
		if err != nil {
			return false, fmt.Errorf("reading its ready line: %w", err)
		}
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == shellReadyTag {
			return f[1] == "1", nil
		}
	}
	return false, fmt.Errorf("no ready line in the first %d bytes of output", maxReadyScan)
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
	return fmt.Errorf("run command on %s: %w: %v", ss.host, ErrConnectionLost, ss.deadWhy)
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
	j := &shellJob{id: ss.nextID, pid: make(chan int, 1), done: make(chan jobDone, 1), out: make(chan jobFrame, 1)}
	ss.jobs[j.id] = j
	ss.mu.Unlock()
	if err := ss.send(runRequest(j.id, line)); err != nil {
		ss.forget(j)
		return nil, err
	}
	return j, nil
}

func (ss *shellSession) forget(j *shellJob) {
	ss.mu.Lock()
	delete(ss.jobs, j.id)
	ss.mu.Unlock()
}

func (ss *shellSession) job(id uint64) *shellJob {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.jobs[id]
}

// fetch asks for a finished job's output, capped at max per stream, and
// turns it into Output.
func (ss *shellSession) fetch(ctx context.Context, j *shellJob, d jobDone, max int) (Output, error) {
	// The frame reader reads the lengths under mu, and forgets the job
	// once its frame is delivered.
	ss.mu.Lock()
	j.outLen, j.errLen = min(d.outSize, int64(max)), min(d.errSize, int64(max))
	ss.mu.Unlock()
	if err := ss.send(getRequest(j.id, j.outLen, j.errLen)); err != nil {
		return Output{ExitCode: d.rc}, err
	}
	select {
	case f := <-j.out:
		out := Output{ExitCode: d.rc}
		out.Stdout, out.StdoutTruncated = capped(f.stdout, d.outSize > j.outLen)
		out.Stderr, out.StderrTruncated = capped(f.stderr, d.errSize > j.errLen)
		return out, nil
	case <-ss.dead:
		return Output{}, ss.lost()
	case <-ctx.Done():
		return Output{}, fmt.Errorf("collect output on %s: %w", ss.host, context.Cause(ctx))
	}
}

// capped marks output the cap cut as capWriter does.
func capped(b []byte, truncated bool) ([]byte, bool) {
	if truncated {
		return append(b[:len(b):len(b)], TruncationMarker...), true
	}
	return b, false
}

// stop kills a timed-out job's process tree through the driver, then
// collects what it wrote. It is bounded by stopTimeout, independent of the
// caller's expired ctx.
func (ss *shellSession) stop(j *shellJob, max int) (Output, error) {
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	var pid int
	select {
	case pid = <-j.pid:
	case <-ss.dead:
		ss.forget(j)
		return Output{}, ss.lost()
	case <-ctx.Done():
		ss.forget(j)
		return Output{}, fmt.Errorf("stop command on %s: the remote process id never arrived, so it may still be running", ss.host)
	}
	g := procGroup{pid: pid, leader: ss.setsid}
	if err := ss.send(killRequest(j.id, g)); err != nil {
		ss.forget(j)
		return Output{}, fmt.Errorf("stop command on %s (process %d): %w; it may still be running", ss.host, pid, err)
	}
	select {
	case d := <-j.done:
		// Killed or finished just as the deadline hit: either way what it
		// wrote is there to collect.
		out, err := ss.fetch(ctx, j, d, max)
		if err != nil {
			return out, fmt.Errorf("stop command on %s: %w", ss.host, err)
		}
		return out, nil
	case <-ss.dead:
		ss.forget(j)
		return Output{}, ss.lost()
	case <-ctx.Done():
		ss.forget(j)
		return Output{}, fmt.Errorf("stop command on %s (process %d): it did not end after the kill; it may still be running", ss.host, pid)
	}
}

// readNotices reads the driver's stderr: pid and done notices, and
// anything else (the driver's own errors) kept for diagnosis.
func (ss *shellSession) readNotices(r io.Reader) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if !ss.notice(sc.Text()) {
			ss.stderrMu.Lock()
			ss.stderrTail = append(ss.stderrTail, sc.Text())
			if len(ss.stderrTail) > 10 {
				ss.stderrTail = ss.stderrTail[1:]
			}
			ss.stderrMu.Unlock()
		}
	}
	ss.die(errors.New("the shell's stderr ended"))
}

// notice handles one notice line and says whether it was one.
func (ss *shellSession) notice(line string) bool {
	f := strings.Fields(line)
	if len(f) < 3 {
		return false
	}
	id, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return false
	}
	n := make([]int64, len(f)-2)
	for i, s := range f[2:] {
		if n[i], err = strconv.ParseInt(s, 10, 64); err != nil {
			return false
		}
	}
	j := ss.job(id)
	switch {
	case f[0] == "pid" && len(n) == 1:
		if j != nil {
			select {
			case j.pid <- int(n[0]):
			default: // a repeated notice; the first one counts
			}
		}
	case f[0] == "done" && len(n) == 3:
		if j != nil {
			select {
			case j.done <- jobDone{rc: int(n[0]), outSize: n[1], errSize: n[2]}:
			default: // a repeated notice; the first one counts
			}
		}
	default:
		return false
	}
	return true
}

func (ss *shellSession) tail() string {
	ss.stderrMu.Lock()
	defer ss.stderrMu.Unlock()
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
	if len(f) != 2 || f[0] != "out" {
		return fmt.Errorf("the shell wrote %q where a frame should start", head)
	}
	id, err := strconv.ParseUint(f[1], 10, 64)
	j := ss.job(id)
	if err != nil || j == nil {
		return fmt.Errorf("the shell framed output for unknown job %q", f[1])
	}
	ss.mu.Lock()
	outLen, errLen := j.outLen, j.errLen
	ss.mu.Unlock()
	body := make([]byte, outLen+errLen)
	if _, err := io.ReadFull(r, body); err != nil {
		return fmt.Errorf("reading the output of job %d: %w", id, err)
	}
	trailer := "\nend " + f[1] + "\n"
	got := make([]byte, len(trailer))
	if _, err := io.ReadFull(r, got); err != nil || !bytes.Equal(got, []byte(trailer)) {
		return fmt.Errorf("the output of job %d did not end where its size said (%q)", id, got)
	}
	ss.forget(j)
	j.out <- jobFrame{stdout: body[:outLen], stderr: body[outLen:]} // buffered, and one get per job
	return nil
}
