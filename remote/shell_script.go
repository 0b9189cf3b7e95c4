package remote

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/runbot/runbot/internal/shell"
)

// shellDriver is the POSIX sh program a Shell runs as its one session. It
// reads one request per line from stdin and answers on two channels:
//
//   - stderr carries only short notices, each one printf of less than
//     PIPE_BUF bytes so that jobs finishing together cannot interleave them:
//     "pid ID PID" once a job started, "done ID RC OUTSIZE ERRSIZE" once it
//     ended.
//   - stdout carries only what the loop itself writes: the ready line, then
//     one frame per "get": "out ID\n", exactly the requested bytes of the
//     job's stdout and stderr, "\nend ID\n".
//
// Requests: "run ID CMD" starts a job, "get ID OUTLEN ERRLEN" frames its
// capped output and deletes its files, "kill ID LINE" runs a kill line in
// the loop. CMD and LINE are printf formats with every byte that is not
// plainly printable written as \ooo (see printfEncode), so a request is one
// line with no spaces inside its fields, whatever the text holds.
//
// Watchers write notices by reopening the driver's stderr through /proc
// rather than holding it: when the driver dies, no job still running keeps
// the session open, so Go learns at once that the commands in flight are
// lost.
//
// Each job runs /bin/sh on a file holding its command, with stdout and
// stderr in files of a private directory (umask 077, removed on exit), in
// its own process group when setsid exists, so a kill line can stop its
// whole tree. A watcher subshell per job waits for it and reports; the loop
// never waits, so jobs run concurrently. Files keep bulk data off the
// notice channel, and reading exactly the sizes Go asks for keeps frames
// intact even when an orphan the job left behind still writes.
//
// The job's file starts with "shift", so that the command sees $0 as
// /bin/sh and no positional parameters, as with `sh -c LINE`.
const shellDriver = `umask 077
rb_d=$(mktemp -d) || exit 125
trap 'rm -rf "$rb_d"' EXIT
trap 'exit 129' HUP
trap 'exit 143' TERM
if command -v setsid >/dev/null 2>&1; then rb_ss=setsid; rb_s=1; else rb_ss=; rb_s=0; fi
rb_n=/proc/$$/fd/2
printf '` + shellReadyTag + ` %s\n' "$rb_s"
while read -r rb_op rb_id rb_a rb_b; do
	case $rb_op in
	run)
		printf "$rb_a" >"$rb_d/$rb_id.c"
		(
			$rb_ss /bin/sh -c '. "$1"' /bin/sh "$rb_d/$rb_id.c" </dev/null >"$rb_d/$rb_id.o" 2>"$rb_d/$rb_id.e" &
			printf 'pid %s %s\n' "$rb_id" "$!" >>"$rb_n"
			wait "$!"
			rb_rc=$?
			cd "$rb_d" || exit
			set -- $(wc -c "$rb_id.o" "$rb_id.e")
			printf 'done %s %s %s %s\n' "$rb_id" "$rb_rc" "$1" "$3" >>"$rb_n"
		) </dev/null >/dev/null 2>/dev/null &
		;;
	get)
		printf 'out %s\n' "$rb_id"
		if [ "$rb_a" -gt 0 ]; then head -c "$rb_a" "$rb_d/$rb_id.o"; fi
		if [ "$rb_b" -gt 0 ]; then head -c "$rb_b" "$rb_d/$rb_id.e"; fi
		printf '\nend %s\n' "$rb_id"
		rm -f "$rb_d/$rb_id.c" "$rb_d/$rb_id.o" "$rb_d/$rb_id.e"
		;;
	kill)
		printf "$rb_a" >"$rb_d/k" && . "$rb_d/k" 2>/dev/null
		;;
	esac
done
`

// shellReadyTag starts the driver's first stdout line; login scripts may
// print before it, so it is searched for.
const shellReadyTag = "runbot-shell-ready-1"

// shellLine is the session command that starts the driver: the login shell
// execs /bin/sh so that every host runs the same language, and the driver
// pid is the session's.
func shellLine() string {
	return "exec /bin/sh -c " + shell.Quote(shellDriver)
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

// runRequest, getRequest and killRequest build the driver's request lines.
func runRequest(id uint64, line string) string {
	return "run " + strconv.FormatUint(id, 10) + " " + printfEncode("shift\n"+line) + "\n"
}

func getRequest(id uint64, outLen, errLen int64) string {
	return "get " + strconv.FormatUint(id, 10) + " " + strconv.FormatInt(outLen, 10) + " " + strconv.FormatInt(errLen, 10) + "\n"
}

func killRequest(id uint64, g procGroup) string {
	return "kill " + strconv.FormatUint(id, 10) + " " + printfEncode(g.killLine()) + "\n"
}
