package sshrun

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/runbot/runbot/internal/shell"
)

// shellDriver is the POSIX sh program a Shell runs as its one session. It
// reads one request per line from stdin and answers on two channels:
//
//   - stderr carries only "fin ID" notices, each one printf of a few bytes,
//     so that jobs finishing together cannot interleave them.
//   - stdout carries only what the loop itself writes: the ready line, then
//     one frame per "get": "out ID RC", the job's stdout as od hex lines,
//     "err", its stderr likewise, "end ID". Hex lines can never read as
//     "err" or "end", whatever the job printed.
//
// Requests: "run ID CMD" starts a job, "get ID N" reaps it and frames the
// first N bytes of each of its streams, "kill ID" kills its process tree,
// "poll" reports the jobs that died without saying so. CMD is a printf
// format with every byte that is not plainly printable written as \ooo
// (see printfEncode), so a request is one line with no spaces inside its
// fields, whatever the text holds.
//
// On this project's hosts a process costs a few milliseconds of CPU (a
// whole SSH session is only about ten times that), so a command costs as
// few as the job needs: the fork and exec of its /bin/sh (behind setsid
// when the host has it, so that the job leads its own process group and a
// kill reaches its whole tree), plus one od per stream that is not empty.
// The job's shell reports its own end from an EXIT trap the job file sets
// (see jobPrefix), so no watcher process waits for it; the loop, its
// parent, reaps it at "get" and so learns the exact status (128+n for a
// signal). A job that cannot run its trap (killed by a signal, or one that
// replaced the trap or exec'd) is found by "poll", which Go sends while
// jobs are outstanding: the loop reads each one's /proc state, a builtin,
// and reports the dead. Notices reach the driver's stderr by reopening it
// through /proc rather than inheriting it, so that when the driver dies no
// job still running holds the session open and Go learns at once that the
// commands in flight are lost.
//
// Output goes to files in a private directory (mktemp -d makes it 0700;
// removed on exit), and the loop removes them in batches to spare a
// process per command. Jobs keep the login's umask and working directory,
// and read stdin from /dev/null.
const shellDriver = `rb_d=$(mktemp -d) || exit 125
trap 'rm -rf "$rb_d"' EXIT
trap 'exit 129' HUP
trap 'exit 143' TERM
if command -v setsid >/dev/null 2>&1; then rb_ss=setsid; rb_s=1; else rb_ss=; rb_s=0; fi
rb_j=
rb_rm=
rb_k=0
printf '` + shellReadyTag + ` %s %s\n' "$rb_s" "$$"
while read -r rb_op rb_id rb_a; do
	case $rb_op in
	run)
		printf "$rb_a" >"$rb_d/$rb_id.c"
		$rb_ss /bin/sh -c '. "$1"' /bin/sh "$rb_d/$rb_id.c" </dev/null >"$rb_d/$rb_id.o" 2>"$rb_d/$rb_id.e" &
		eval "rb_p$rb_id=\$!"
		rb_j="$rb_j $rb_id"
		;;
	get)
		eval "rb_x=\$rb_p$rb_id"
		wait "$rb_x"
		printf 'out %s %s\n' "$rb_id" "$?"
		[ -s "$rb_d/$rb_id.o" ] && od -An -v -tx1 -N "$rb_a" "$rb_d/$rb_id.o"
		printf 'err\n'
		[ -s "$rb_d/$rb_id.e" ] && od -An -v -tx1 -N "$rb_a" "$rb_d/$rb_id.e"
		printf 'end %s\n' "$rb_id"
		unset "rb_p$rb_id"
		rb_l=
		for rb_i in $rb_j; do [ "$rb_i" = "$rb_id" ] || rb_l="$rb_l $rb_i"; done
		rb_j=$rb_l
		rb_rm="$rb_rm $rb_id.c $rb_id.o $rb_id.e"
		rb_k=$((rb_k + 1))
		if [ "$rb_k" -ge 32 ]; then
			(cd "$rb_d" && exec rm -f $rb_rm)
			rb_rm=
			rb_k=0
		fi
		;;
	kill)
		eval "rb_x=\$rb_p$rb_id"
		[ -n "$rb_x" ] && { ` + "KILL_LINE" + `; } 2>/dev/null
		;;
	poll)
		for rb_i in $rb_j; do
			eval "rb_x=\$rb_p$rb_i"
			rb_l=
			read -r rb_l <"/proc/$rb_x/stat" 2>/dev/null
			rb_l=${rb_l##*) }
			case $rb_l in Z* | X* | '') printf 'fin %s\n' "$rb_i" >&2 ;; esac
		done
		;;
	esac
done
`

// shellReadyTag starts the driver's first stdout line; login scripts may
// print before it, so it is searched for.
const shellReadyTag = "runbot-shell-ready-2"

// shellLine is the session command that starts the driver: the login shell
// execs /bin/sh so that every host runs the same language, the driver pid
// is the session's, and jobs see $0 as /bin/sh. The kill case is written
// from procGroup.killLine, so a timed-out job is stopped exactly as Runner.Run
// stops a command: its group when setsid made it a leader, else it and its
// children.
func shellLine() string {
	const pid = 999999999
	line := func(leader bool) string {
		return strings.ReplaceAll(procGroup{pid: pid, leader: leader}.killLine(), strconv.Itoa(pid), `"$rb_x"`)
	}
	kill := `if [ "$rb_s" = 1 ]; then ` + line(true) + `; else ` + line(false) + `; fi`
	return "exec /bin/sh -c " + shell.Quote(strings.Replace(shellDriver, "KILL_LINE", kill, 1)) + " /bin/sh"
}

// jobPrefix starts every job's file: shift drops the file name, so the
// command sees no positional parameters, as with `sh -c LINE`; the EXIT
// trap tells Go the job ended, through the driver's stderr (pid is the
// driver's). A command that sets its own EXIT trap replaces this one; its
// end is then found by poll.
func jobPrefix(id uint64, driverPID int) string {
	return fmt.Sprintf("shift\ntrap 'printf \"fin %d\\n\" >>/proc/%d/fd/2 2>/dev/null' EXIT\n", id, driverPID)
}

// printfEncode writes s as a printf format that prints s: letters, digits
// and harmless punctuation stay, everything else (space, newline, '\', '%',
// '-', which could read as an option, and non-ASCII bytes) becomes \ooo.
func printfEncode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if plainPrintf(c) {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, `\%03o`, c)
	}
	return b.String()
}

func plainPrintf(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("!\"#$&'()*+,./:;<=>?@[]^_`{|}~", c) >= 0
}

// runRequest, getRequest, killRequest and pollRequest build the driver's
// request lines.
func runRequest(id uint64, driverPID int, line string) string {
	return "run " + strconv.FormatUint(id, 10) + " " + printfEncode(jobPrefix(id, driverPID)+line) + "\n"
}

func getRequest(id uint64, n int) string {
	return "get " + strconv.FormatUint(id, 10) + " " + strconv.Itoa(n) + "\n"
}

func killRequest(id uint64) string {
	return "kill " + strconv.FormatUint(id, 10) + "\n"
}

const pollRequest = "poll\n"
