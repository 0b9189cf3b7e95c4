package sshrun

import (
	"bytes"
	"strconv"
	"strings"
	"sync"

	"github.com/runbot/runbot/internal/shell"
	"github.com/runbot/runbot/remote"
)

// OpenSSH's sshd starts every session's command in a new session (setsid),
// so the login shell that runs it leads its own process group. The line
// runbot sends has that shell report its pid and process group on the first
// stdout line, then exec the command in the same process, so a timed-out
// command's whole tree can be killed from a second session.
// Signals sent over the SSH channel are not enough: servers may ignore them,
// and they reach only the shell.
//
// The prefix is plain POSIX that bash, dash, zsh and ksh login shells parse
// alike (runbot needs such a login shell for the remote account); reading
// /proc/$$/stat with the `read` builtin costs no extra process. The command
// line then reaches /bin/sh as one single-quoted word, so that every host
// has the same command language, unless it is only literal words (as the
// checks write their commands with shell.Join) naming a program: such a
// line means the same to every POSIX shell, and the login shell execs it
// itself, which spares the host a /bin/sh process (about 10 ms of CPU on a
// small host, a third of what a journalctl read costs in all).
const wrapperPrefix = `read -r rb_1 rb_2 rb_3 rb_4 rb_g rb_5 2>/dev/null </proc/$$/stat; ` +
	`printf '` + pgidTag + ` %s %s\n' "$$" "$rb_g"; exec `

// pgidTag starts the header line.
const pgidTag = "runbot-pgid"

// wrapLine returns the line to send for a command line.
func wrapLine(line string) string {
	if words, ok := shell.Words(line); ok && !shellBuiltins[words[0]] {
		return wrapperPrefix + line
	}
	return wrapperPrefix + "/bin/sh -c " + shell.Quote(line)
}

// shellBuiltins are the words a shell runs itself, or reads as syntax,
// rather than looking up in PATH: `exec` would run another program of the
// name (coreutils' echo reads backslashes unlike dash's), or none at all.
var shellBuiltins = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`! . : [ [[ { } alias bg break builtin case cd command continue declare do done echo elif else
		esac eval exec exit export false fc fg fi for function getopts hash if in jobs kill let local logout printf pwd read readonly
		return select set shift source test then time times trap true type typeset ulimit umask unalias unset until wait while`) {
		shellBuiltins[w] = true
	}
}

// procGroup says what to kill when a command times out.
type procGroup struct {
	pid int
	// leader says pid leads its process group, so the group can be killed.
	leader bool
}

// killLine returns the line that stops the command's process tree.
func (g procGroup) killLine() string {
	p := strconv.Itoa(g.pid)
	if g.leader {
		// `kill -KILL -N` is understood by dash, bash and busybox alike;
		// `--` is not.
		return "kill -KILL -" + p + " 2>/dev/null || kill -KILL " + p
	}
	// Not a group leader (a server that does not setsid): kill the command
	// and its direct children, the best that can be done without a group.
	return "pkill -KILL -P " + p + " 2>/dev/null; kill -KILL " + p
}

// headerWriter strips the wrapper's header line from stdout and reports the
// process group it names; all other bytes go to next. Lines before the
// header (a noisy login script) are passed through.
type headerWriter struct {
	next  *remote.CapWriter
	found chan procGroup // receives once, then is never used again
	mu    sync.Mutex
	buf   []byte
	done  bool
}

// maxHeaderScan bounds how much stdout is searched for the header, so a
// server that somehow skips the wrapper cannot make runbot buffer forever.
const maxHeaderScan = 4096

func newHeaderWriter(next *remote.CapWriter) *headerWriter {
	return &headerWriter{next: next, found: make(chan procGroup, 1)}
}

func (w *headerWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return w.next.Write(p)
	}
	w.buf = append(w.buf, p...)
	for {
		nl := bytes.IndexByte(w.buf, '\n')
		if nl < 0 {
			if len(w.buf) > maxHeaderScan {
				w.flush()
			}
			return len(p), nil
		}
		line := w.buf[:nl]
		if g, ok := parseHeader(line); ok {
			w.found <- g
			w.buf = w.buf[nl+1:]
			w.flush()
			return len(p), nil
		}
		_, _ = w.next.Write(w.buf[:nl+1]) // a CapWriter never fails
		w.buf = w.buf[nl+1:]
	}
}

// flush gives up on the header and forwards what is buffered. Callers hold mu.
func (w *headerWriter) flush() {
	w.done = true
	_, _ = w.next.Write(w.buf) // a CapWriter never fails
	w.buf = nil
}

// output returns what stdout produced so far, including bytes still held
// while looking for the header.
func (w *headerWriter) output() (out []byte, truncated bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done && len(w.buf) > 0 {
		w.flush()
	}
	return bytes.Clone(w.next.Bytes()), w.next.Truncated()
}

func parseHeader(line []byte) (procGroup, bool) {
	f := bytes.Fields(line)
	if len(f) < 2 || len(f) > 3 || string(f[0]) != pgidTag {
		return procGroup{}, false
	}
	pid, err := strconv.Atoi(string(f[1]))
	if err != nil || pid <= 1 {
		return procGroup{}, false
	}
	g := procGroup{pid: pid}
	if len(f) == 3 {
		pg, err := strconv.Atoi(string(f[2]))
		g.leader = err == nil && pg == pid
	}
	return g, true
}

// lockedWriter lets stderr be read while the session may still write to it
// (a timed-out command's partial output).
type lockedWriter struct {
	mu sync.Mutex
	w  *remote.CapWriter
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) output() ([]byte, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Clone(l.w.Bytes()), l.w.Truncated()
}
