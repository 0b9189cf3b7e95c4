package sim

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// Logger writes lines in SGLang's own log format: "[YYYY-mm-dd HH:MM:SS{rank}] message".
// Every line is written with a single Write call on an unbuffered writer, so that
// under systemd each line reaches journald the moment it is logged, exactly like a
// Python logging.StreamHandler that flushes per record.
type Logger struct {
	mu  sync.Mutex
	w   io.Writer
	era LogEra
	now func() time.Time
	// loc is the zone of the prefix: Python's logging formats asctime in the host's
	// local time (time.localtime), i.e. the process's TZ, never UTC by itself.
	loc *time.Location
	// millis adds ".mmm" to the prefix, as SGLANG_LOG_MS does on the builds that
	// honour it.
	millis bool
}

// NewLogger returns a Logger that writes to w in the given era's wording, with
// host-local time stamps (TZ) and no milliseconds.
func NewLogger(w io.Writer, era LogEra) *Logger {
	return &Logger{w: w, era: era, now: time.Now, loc: time.Local}
}

// newEngineLogger is the logger of an engine process: the era of its profile (or
// --sim-log-format), local time stamps, and milliseconds when SGLANG_LOG_MS is set
// on a build that reads it.
func newEngineLogger(w io.Writer, c EngineConfig) *Logger {
	l := NewLogger(w, c.Sim.LogEra)
	l.millis = c.Sim.Profile.LogMillisEnv && envTrue(os.Getenv("SGLANG_LOG_MS"))
	return l
}

// Era returns the log wording in use.
func (l *Logger) Era() LogEra { return l.era }

// stamp renders the time part of the prefix, "%Y-%m-%d %H:%M:%S" in the local zone.
func (l *Logger) stamp() string {
	t := l.now().In(l.loc)
	if l.millis {
		return t.Format("2006-01-02 15:04:05.000")
	}
	return t.Format("2006-01-02 15:04:05")
}

// Logf writes one line with the given rank prefix (e.g. " DP0 TP0", or "" for the
// HTTP/tokenizer processes, which log without a rank).
func (l *Logger) Logf(rank, format string, args ...any) {
	l.write("[" + l.stamp() + rank + "] " + fmt.Sprintf(format, args...) + "\n")
}

// Raw writes a line verbatim, for the third-party lines SGLang's stream carries
// (NIXL's own logger, uvicorn before its formatter is installed).
func (l *Logger) Raw(line string) {
	l.write(line + "\n")
}

// RawStamp returns the "YYYY-mm-dd HH:MM:SS" form used by NIXL's own (Python) logger,
// in the same local zone.
func (l *Logger) RawStamp() string {
	return l.now().In(l.loc).Format("2006-01-02 15:04:05")
}

// Clock renders t as "HH:MM:SS" in the logger's zone, the form of the time stamps
// SGLang writes inside messages (time.strftime, local time).
func (l *Logger) Clock(t time.Time) string {
	return t.In(l.loc).Format("15:04:05")
}

func (l *Logger) write(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	// A failed write to stdout cannot be reported anywhere more useful than stdout
	// itself, so it is dropped, as Python's logging does.
	_, _ = io.WriteString(l.w, s)
}

// Topology is the parallel layout of an engine, which decides the rank prefix of
// its log lines and the labels of its metrics (reference §1.1 and §3.1).
type Topology struct {
	TPSize      int
	DPSize      int
	DPAttention bool
}

// LoggingRanks returns how many schedulers print batch lines: one per DP rank with
// DP attention, otherwise only TP0.
func (t Topology) LoggingRanks() int {
	if t.DPAttention && t.DPSize > 1 {
		return t.DPSize
	}
	return 1
}

// attnTP is the attention-TP width of one DP rank.
func (t Topology) attnTP() int {
	if t.DPAttention && t.DPSize > 1 && t.TPSize >= t.DPSize {
		return t.TPSize / t.DPSize
	}
	return t.TPSize
}

// GlobalTP returns the global TP rank of the stats-logging scheduler of DP rank dp.
func (t Topology) GlobalTP(dp int) int {
	if t.DPAttention && t.DPSize > 1 {
		return dp * t.attnTP()
	}
	return 0
}

// Prefix returns the rank part of a scheduler's log prefix, built in SGLang's order:
// DP (only with DP attention), then TP (only when tp_size > 1).
func (t Topology) Prefix(dp, tp int) string {
	s := ""
	if t.DPAttention && t.DPSize > 1 {
		s += fmt.Sprintf(" DP%d", dp)
	}
	if t.TPSize > 1 {
		s += fmt.Sprintf(" TP%d", tp)
	}
	return s
}

// HolderRanks returns the (dp, tp) pairs that hold a request assigned to DP rank dp.
// Error lines are printed by every rank holding the request: with DP attention that
// is the DP rank's attention-TP group, without it every TP rank.
func (t Topology) HolderRanks(dp int) [][2]int {
	if t.DPAttention && t.DPSize > 1 {
		out := make([][2]int, 0, t.attnTP())
		for i := 0; i < t.attnTP(); i++ {
			out = append(out, [2]int{dp, dp*t.attnTP() + i})
		}
		return out
	}
	out := make([][2]int, 0, t.TPSize)
	for i := 0; i < max(t.TPSize, 1); i++ {
		out = append(out, [2]int{0, i})
	}
	return out
}
