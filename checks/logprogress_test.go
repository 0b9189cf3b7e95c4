package checks

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/argspec"
	"github.com/runbot/runbot/internal/sglanglog"
	"github.com/runbot/runbot/internal/step"
	"github.com/runbot/runbot/internal/target"
	"github.com/runbot/runbot/remote"
)

const fixtures = "../testdata/sglang/"

// TestParseFixtureLogs parses every log in testdata/sglang: every line must
// yield an entry with a time, in order, and the last progress line must be
// the one the fixture README names.
func TestParseFixtureLogs(t *testing.T) {
	want := map[string]struct {
		progress string
		last     string
		ranks    string
		failures int
	}{
		"decode-healthy.log": {"Decode batch", "2026-06-18 19:59:59", "DP2 TP2", 0},
		"decode-wedged.log":  {"Decode batch", "2026-06-18 20:38:03", "DP0 TP0", 28},
		"prefill-wedged.log": {"Prefill batch", "2026-06-18 21:06:26", "TP0", 112},
	}
	files, err := filepath.Glob(fixtures + "*.log")
	require.NoError(t, err)
	require.Len(t, files, len(want), "a new fixture log needs a row here")
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			w, ok := want[filepath.Base(f)]
			require.True(t, ok)
			raw, err := os.ReadFile(f)
			require.NoError(t, err)
			entries := parseLog(raw, FormatAuto, time.UTC, false)
			require.Len(t, entries, countLines(raw))
			var last logEntry
			failures := 0
			// Plain ifs: thousands of require calls are slow under -race.
			for i, e := range entries {
				if e.Time.IsZero() {
					t.Fatalf("line %d has no time: %s", i+1, e.Message)
				}
				if i > 0 && e.Time.Before(entries[i-1].Time) {
					t.Fatalf("line %d out of order", i+1)
				}
				if strings.HasPrefix(e.Text, w.progress) {
					last = e
					if b, ok := sglanglog.ParseBatch(e.Text); !ok || len(b.Fields) < 8 {
						t.Fatalf("batch line %d does not parse: %s", i+1, e.Text)
					}
				}
				if strings.Contains(e.Text, "transfer failed") {
					failures++
					if room, rid := sglanglog.IDs(e.Text); room == "" || rid == "" {
						t.Fatalf("line %d: no room or rid: %s", i+1, e.Text)
					}
				}
			}
			require.Equal(t, utc(w.last), last.Time)
			require.Equal(t, w.ranks, last.Ranks)
			require.Equal(t, w.failures, failures)
		})
	}
}

func countLines(b []byte) int {
	n := 0
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) != "" {
			n++
		}
	}
	return n
}

func logEnv(args argspec.Values, now string, observed ...step.Event) Env {
	return Env{
		Target:   target.Target{Role: "decode", Host: "gpu-node-01", Runner: &remote.Local{Name: "gpu-node-01"}, Unit: "sglang-dsv4-decode"},
		Args:     args,
		Now:      func() time.Time { return utc(now) },
		Observed: observed,
	}
}

func probeEvent(id, outcome, start string, d time.Duration) step.Event {
	t := utc(start)
	return step.Event{Kind: EventProbe, Time: t, End: t.Add(d), Labels: map[string]string{"request_id": id, "outcome": outcome}}
}

func runLog(t *testing.T, env Env) (LogProgressOutput, step.Result) {
	t.Helper()
	res, err := LogProgress{}.Run(t.Context(), env)
	require.NoError(t, err)
	o, ok := res.Values.(LogProgressOutput)
	require.True(t, ok, "Values is %T", res.Values)
	for _, l := range res.Evidence {
		t.Log(l)
	}
	return o, res
}

// The incident, read from the decode unit's log half an hour into the
// wedge, after this run's chat probes hung: decode is stalled, and the
// aborts that line up with our probes are echoes.
func TestLogProgressWedgedDecode(t *testing.T) {
	abs, err := filepath.Abs(fixtures + "decode-wedged.log")
	require.NoError(t, err)
	env := logEnv(argspec.Values{
		"file": abs, "progress": "Decode batch", "stall_after": time.Minute,
		"patterns": map[string]string{"aborts": `Decode transfer failed.*Aborted`},
	}, "2026-06-18 21:07:30",
		// Hung at the first byte and gave up at 21:05:26; decode logged the
		// abort the same second.
		probeEvent("rb-0001", OutcomeTimeout, "2026-06-18 21:04:51", 35*time.Second),
		// Its request id is the rid of the 21:06:27 abort line.
		probeEvent("f309092f2c79e277d85a0aa1fa0d1a0a", OutcomeTimeout, "2026-06-18 20:10:00", 35*time.Second),
		// A health probe that answered: the 21:04:26 abort is not its doing.
		probeEvent("rb-0003", OutcomeOK, "2026-06-18 21:04:20", 10*time.Second),
	)
	o, res := runLog(t, env)

	require.True(t, o.Found)
	require.Equal(t, utc("2026-06-18 20:38:03"), o.LastProgress)
	require.Equal(t, 29*time.Minute+27*time.Second, o.Gap)
	require.True(t, o.Stalled)
	require.Greater(t, o.PerMinute, 100.0, "decode was busy before it went quiet")
	require.Zero(t, o.ProgressLines, "none inside the 15m window")
	require.Equal(t, 1.0, o.LastFields["transfer-req"])
	require.Equal(t, 1.0, o.LastFields["running-req"])
	require.Contains(t, o.LastLine, "[2026-06-18 20:38:03 DP0 TP0] Decode batch")
	require.Equal(t, utc("2026-06-18 20:38:03"), o.LastByRank["DP0 TP0"])
	require.Equal(t, "log file "+abs, o.Source)

	aborts := o.Patterns["aborts"]
	require.Equal(t, 14, aborts.Count, "aborts from 20:53:16 to 21:06:27")
	require.Equal(t, 14, aborts.Lines)
	require.Equal(t, 2, aborts.Echoes)
	require.Equal(t, 12, aborts.Unexplained)
	require.Equal(t, utc("2026-06-18 20:53:16"), aborts.First)
	require.Equal(t, utc("2026-06-18 21:06:27"), aborts.Last)
	require.Len(t, aborts.Rooms, 14)
	require.Equal(t, "6913527235152270480", aborts.Rooms[13])
	require.Equal(t, 2, o.Echoes)
	require.Equal(t, 12, o.Unexplained)

	require.Equal(t, []string{
		`last "Decode batch" line at 20:38:03 UTC (29m27s ago), 186.2 lines/min before it — stalled: silent for more than 1m0s`,
		"last progress line: [2026-06-18 20:38:03 DP0 TP0] Decode batch, #running-req: 1, #token: 3779, token usage: 0.01, pre-allocated usage: 0.01, #prealloc-req: 0, #transfer-req: 1, #retracted-req: 0, cuda graph: True, gen throughput (token/s): 31.62, #queue-req: 0",
		"aborts: 14 in the last 15m0s, 20:53:16 UTC to 21:06:27 UTC; 2 caused by this run's own probes (echoes), 12 unexplained; latest room 6913527235152270480",
	}, step.AgesOf(res.Evidence, utc("2026-06-18 21:07:30")), "ages counted from the read")

	byKind := map[string][]step.Event{}
	for _, e := range res.Events {
		byKind[e.Kind] = append(byKind[e.Kind], e)
	}
	require.Len(t, byKind[EventProgress], 1)
	require.Len(t, byKind[EventStall], 1)
	require.Equal(t, utc("2026-06-18 21:07:30"), byKind[EventStall][0].End)
	require.Len(t, byKind[EventProgressRate], 16, "one bucket per minute of the window")
	for _, e := range byKind[EventProgressRate] {
		require.Zero(t, e.Value)
	}
	matches := byKind[EventLogMatch]
	require.Len(t, matches, 14)
	var echoes []string
	for _, m := range matches {
		if m.Labels["attribution"] == AttrEcho {
			echoes = append(echoes, m.Labels["request_id"]+" by "+m.Labels["by"])
		}
	}
	require.Equal(t, []string{"rb-0001 by time", "f309092f2c79e277d85a0aa1fa0d1a0a by id"}, echoes)
}

// Prefill logs each abort once per TP rank; one request is one occurrence.
func TestLogProgressPrefillRanksCollapse(t *testing.T) {
	abs, err := filepath.Abs(fixtures + "prefill-wedged.log")
	require.NoError(t, err)
	o, res := runLog(t, logEnv(argspec.Values{
		"file": abs, "progress": "^Prefill batch", "window": time.Hour, "stall_after": 90 * time.Second,
		"patterns": map[string]string{"aborts": `Prefill transfer failed.*Aborted`},
	}, "2026-06-18 21:07:30"))
	require.False(t, o.Stalled, "prefill still batches about once a minute")
	require.Equal(t, utc("2026-06-18 21:06:26"), o.LastProgress)
	require.Equal(t, 1.0, o.LastFields["inflight-req"])
	require.Equal(t, 28, o.Patterns["aborts"].Count)
	require.Equal(t, 112, o.Patterns["aborts"].Lines)
	require.Contains(t, res.Evidence[len(res.Evidence)-1], "aborts: 28 in the last 1h0m0s (112 lines: each rank logs its own)")
}

// Without a progress line, silence is measured from what is known: the
// unit's start when it started inside the window, else the window, and the
// evidence says which. A process 25 s old is never "silent for 15 minutes".
func TestLogProgressNoProgressInWindow(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "decode.log")
	health := "[2026-06-18 21:00:01] INFO:     127.0.0.1:1 - \"GET /health HTTP/1.1\" 200 OK\n" +
		"[2026-06-18 21:00:02] INFO:     127.0.0.1:1 - \"GET /health HTTP/1.1\" 200 OK\n"
	oldBatch := "[2026-06-18 20:59:30 TP0] Decode batch, #running-req: 1, #token: 64, token usage: 0.20, gen throughput (token/s): 58.87, #queue-req: 0\n"
	cases := []struct {
		name     string
		log      string
		started  string // unit start, "" for no service manager
		showErr  error
		stalled  bool
		gap      time.Duration
		from     string
		evidence string
	}{
		{name: "unit start unknown", log: health, stalled: true, gap: 15 * time.Minute, from: GapFromWindow,
			evidence: `no "Decode batch" line in the last 15m0s (2 other lines read from the log file ` + f + `); when the unit started is unknown, so 15m0s is a lower bound — stalled: silent for more than 1m0s`},
		{name: "started 25s ago", log: health, started: "2026-06-18 21:04:35", stalled: false, gap: 25 * time.Second, from: GapFromUnitStart,
			evidence: `no "Decode batch" line since the unit started at 21:04:35 UTC (25s ago; 2 lines read from the log file ` + f + `) — silent for 25s, under the 1m0s stall threshold`},
		{name: "batch before a restart", log: oldBatch + health, started: "2026-06-18 21:03:00", stalled: true, gap: 2 * time.Minute, from: GapFromUnitStart,
			evidence: `no "Decode batch" line since the unit started at 21:03:00 UTC (2m0s ago; 3 lines read from the log file ` + f + `); the last one, at 20:59:30 UTC, was logged by the process before — stalled: silent for more than 1m0s`},
		{name: "up longer than the window", log: health, started: "2026-06-18 18:00:00", stalled: true, gap: 15 * time.Minute, from: GapFromWindow,
			evidence: `no "Decode batch" line in the last 15m0s (2 other lines read from the log file ` + f + `); the unit has been up since 18:00:00 UTC — stalled: silent for more than 1m0s`},
		{name: "service manager fails", log: health, showErr: errors.New("no such unit"), stalled: true, gap: 15 * time.Minute, from: GapFromWindow,
			evidence: `no "Decode batch" line in the last 15m0s (2 other lines read from the log file ` + f + `); when the unit started is unknown (read start time of sglang-dsv4-decode: no such unit), so 15m0s is a lower bound — stalled: silent for more than 1m0s`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.NoError(t, os.WriteFile(f, []byte(c.log), 0o644))
			env := logEnv(argspec.Values{"file": f, "progress": "Decode batch"}, "2026-06-18 21:05:00")
			if c.started != "" || c.showErr != nil {
				var st remote.UnitState
				if c.started != "" {
					st.ActiveEnter = utc(c.started)
				}
				env.Target.Unit = "sglang-dsv4-decode"
				env.Target.Services = services{state: st, err: c.showErr}
			}
			o, res := runLog(t, env)
			require.Equal(t, c.stalled, o.Stalled)
			require.Equal(t, c.gap, o.Gap)
			require.Equal(t, c.from, o.GapFrom)
			require.Equal(t, c.evidence, step.Ages(res.Evidence[0], utc("2026-06-18 21:05:00")))
		})
	}

	require.NoError(t, os.WriteFile(f, nil, 0o644))
	o, res := runLog(t, logEnv(argspec.Values{"file": f, "progress": "Decode batch"}, "2026-06-18 21:05:00"))
	require.Zero(t, o.Lines)
	require.Contains(t, res.Evidence[0], "the service logged nothing at all")
}

// A plain file as SGLang writes it when run by hand: no journal, times in
// the host's zone, milliseconds, newer batch format.
func TestLogProgressPlainFileInHostZone(t *testing.T) {
	f := filepath.Join(t.TempDir(), "decode.log")
	require.NoError(t, os.WriteFile(f, []byte(
		"[2026-09-24 03:50:42.500 DP0 TP0 EP0] Decode batch [100], #running-req: 2, #token: 64, token usage: 0.20, cuda graph: True, gen throughput (token/s): 58.87, #queue-req: 0\n"+
			"[2026-09-24 03:50:43.001 DP1 TP1 EP1] Decode batch [100], #running-req: 1, #token: 64, token usage: 0.20, cuda graph: True, gen throughput (token/s): 50.00, #queue-req: 0\n"+
			"Traceback (most recent call last):\n"+
			"  File \"x.py\", line 1\n"), 0o644))
	o, _ := runLog(t, logEnv(argspec.Values{"file": f, "progress": "Decode batch", "timezone": "Europe/Berlin"}, "2026-09-24 01:51:13"))
	require.Equal(t, utc("2026-09-24 01:50:43.001"), o.LastProgress)
	require.Equal(t, 29999*time.Millisecond, o.Gap)
	require.False(t, o.Stalled)
	require.Equal(t, 4, o.Lines, "traceback lines take the time of the line before")
	require.Equal(t, []string{}, o.LaggingRanks)
}

// By default a plain file's stamps are read in the host's own zone, which
// the step asks the host for: SGLang logs host-local time, and a host five
// and a half hours east of UTC would otherwise look silent for hours.
func TestLogProgressPlainFileAsksTheHostsZone(t *testing.T) {
	t.Setenv("TZ", "IST-5:30") // a POSIX zone: no zone database needed
	f := filepath.Join(t.TempDir(), "decode.log")
	require.NoError(t, os.WriteFile(f, []byte(
		"[2026-09-24 07:20:42] Decode batch, #running-req: 2, #token: 64, token usage: 0.20, cuda graph: True, gen throughput (token/s): 58.87, #queue-req: 0\n"), 0o644))
	o, res := runLog(t, logEnv(argspec.Values{"file": f, "progress": "Decode batch"}, "2026-09-24 01:51:02"))
	require.Equal(t, utc("2026-09-24 01:50:42"), o.LastProgress)
	require.Equal(t, 20*time.Second, o.Gap)
	for _, l := range res.Evidence {
		require.NotContains(t, l, "time zone is unknown")
	}
}

// A unit can give SGLang a zone of its own (Environment=TZ=…): the file's
// newest stamp against the time it was last written says the zone of the
// process that wrote it, whatever the host's zone is.
func TestLogProgressPlainFileInTheProcesssZone(t *testing.T) {
	t.Setenv("TZ", "UTC0")
	f := filepath.Join(t.TempDir(), "decode.log")
	require.NoError(t, os.WriteFile(f, []byte(
		"[2026-09-24 07:20:40] Decode batch, #running-req: 2, #token: 64, token usage: 0.20, cuda graph: True, gen throughput (token/s): 58.87, #queue-req: 0\n"+
			"[2026-09-24 07:20:42] Decode batch, #running-req: 2, #token: 64, token usage: 0.20, cuda graph: True, gen throughput (token/s): 58.87, #queue-req: 0\n"), 0o644))
	written := utc("2026-09-24 01:50:42")
	require.NoError(t, os.Chtimes(f, written, written))
	o, _ := runLog(t, logEnv(argspec.Values{"file": f, "progress": "Decode batch"}, "2026-09-24 01:51:02"))
	require.Equal(t, utc("2026-09-24 01:50:42"), o.LastProgress, "read in +0530, the writer's zone, not the host's UTC")
	require.Equal(t, 20*time.Second, o.Gap)
}

func TestLogProgressLaggingRank(t *testing.T) {
	f := filepath.Join(t.TempDir(), "decode.log")
	require.NoError(t, os.WriteFile(f, []byte(
		"[2026-06-18 20:50:00 DP3 TP3] Decode batch, #running-req: 1\n"+
			"[2026-06-18 20:59:58 DP0 TP0] Decode batch, #running-req: 4\n"), 0o644))
	o, res := runLog(t, logEnv(argspec.Values{"file": f, "progress": "Decode batch"}, "2026-06-18 21:00:00"))
	require.False(t, o.Stalled)
	require.Equal(t, []string{"DP3 TP3"}, o.LaggingRanks)
	require.Contains(t, res.Evidence, "ranks silent for more than 1m0s while others progress: DP3 TP3")
}

// writeFakeJournal turns a short-iso fixture into `journalctl -o json`
// lines and installs a journalctl script that prints them newest first, as
// `journalctl -r` does, and records its arguments.
func writeFakeJournal(t *testing.T, fixture string) (argsFile string) {
	t.Helper()
	dir := t.TempDir()
	raw, err := os.ReadFile(fixtures + fixture)
	require.NoError(t, err)
	var lines []string
	for l := range strings.Lines(string(raw)) {
		r, ok := parseShortISO(strings.TrimRight(l, "\n"))
		require.True(t, ok, l)
		b, err := json.Marshal(map[string]string{
			"__REALTIME_TIMESTAMP": fmt.Sprint(r.JournalTime.UnixMicro()), "MESSAGE": r.Message,
			"SYSLOG_IDENTIFIER": r.Ident, "_PID": fmt.Sprint(r.PID), "_SYSTEMD_UNIT": "sglang-dsv4-decode.service",
		})
		require.NoError(t, err)
		lines = append(lines, string(b))
	}
	slices.Reverse(lines)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "journal.json"), []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	argsFile = filepath.Join(dir, "args")
	script := fmt.Sprintf("#!/bin/sh\nprintf '%%s\\n' \"$@\" > %s\ncat %s\n", argsFile, filepath.Join(dir, "journal.json"))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "journalctl"), []byte(script), 0o755))
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return argsFile
}

func TestLogProgressJournalHealthy(t *testing.T) {
	argsFile := writeFakeJournal(t, "decode-healthy.log")
	now := "2026-06-18 20:00:05"
	o, res := runLog(t, logEnv(argspec.Values{"progress": "Decode batch", "window": 5 * time.Minute,
		"patterns": map[string]string{"aborts": "transfer failed"}}, now))

	got, err := os.ReadFile(argsFile)
	require.NoError(t, err)
	since := utc(now).Add(-5 * time.Minute).Unix()
	require.Equal(t, []string{"-u", "sglang-dsv4-decode", "-o", "json", "--output-fields=MESSAGE,SYSLOG_IDENTIFIER,_PID",
		"--since", fmt.Sprintf("@%d", since), "--no-pager", "-q", "-r"}, strings.Fields(string(got)))

	require.Equal(t, "journal of sglang-dsv4-decode", o.Source)
	require.True(t, o.Found)
	require.False(t, o.Stalled)
	require.Equal(t, utc("2026-06-18 19:59:59"), o.LastProgress)
	require.Equal(t, 6*time.Second, o.Gap)
	require.InDelta(t, 173.4, o.PerMinute, 0.1, "345 lines from 19:58:00 to 19:59:59")
	require.Len(t, o.LastByRank, 4)
	require.Contains(t, o.LastLine, "DP2 TP2", "of the lines at 19:59:59 the last one written is reported")
	require.Zero(t, o.Patterns["aborts"].Count)
	require.Contains(t, res.Evidence[0], "progressing")
	require.Contains(t, res.Evidence, "aborts: none in the last 5m0s")
}

// With a small read limit the journal's newest entries are kept, because it
// is read newest first.
func TestLogProgressJournalTruncatedKeepsNewest(t *testing.T) {
	writeFakeJournal(t, "decode-healthy.log")
	o, res := runLog(t, logEnv(argspec.Values{"progress": "Decode batch", "max_bytes": 8192}, "2026-06-18 20:00:05"))
	require.True(t, o.Truncated)
	require.Equal(t, utc("2026-06-18 19:59:59"), o.LastProgress)
	require.Less(t, o.Lines, 40)
	require.Contains(t, res.Evidence, "the log was longer than the read limit; only its newest part was read")
}

func TestLogProgressCannotRead(t *testing.T) {
	_, err := LogProgress{}.Run(t.Context(), logEnv(argspec.Values{"file": "/nonexistent/decode.log", "progress": "x"}, "2026-06-18 20:00:00"))
	require.ErrorContains(t, err, "read log file /nonexistent/decode.log on gpu-node-01: `tail -c 8388608 /nonexistent/decode.log` exited 1")

	env := logEnv(argspec.Values{"progress": "x"}, "2026-06-18 20:00:00")
	env.Target.Unit = ""
	_, err = LogProgress{}.Run(t.Context(), env)
	require.ErrorContains(t, err, "no unit or log file")
}

func TestLogProgressPlan(t *testing.T) {
	plan := LogProgress{}.Plan(logEnv(argspec.Values{"progress": "Decode batch"}, "2026-06-18 21:07:30"))
	since := utc("2026-06-18 20:52:30").Unix()
	require.Equal(t, []string{fmt.Sprintf("read journal of sglang-dsv4-decode on gpu-node-01: journalctl -u sglang-dsv4-decode -o json --output-fields=MESSAGE,SYSLOG_IDENTIFIER,_PID --since @%d --no-pager -q -r", since)}, plan)
}

// A busy engine logs many lines a second: recent keeps the newest 50 and,
// before them, the first line of each second, so that an expression can
// look at any moment of the window without a report of thousands of lines.
func TestLogProgressRecentThinsBusyLogs(t *testing.T) {
	var b strings.Builder
	for sec := range 10 {
		for i := range 100 {
			fmt.Fprintf(&b, "[2026-06-18 21:00:%02d TP0] Prefill batch, #new-seq: 1, #new-token: 9, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0, #prealloc-req: 0, #inflight-req: %d, input throughput (token/s): 9.00, \n", sec, sec*100+i)
		}
	}
	f := filepath.Join(t.TempDir(), "prefill.log")
	require.NoError(t, os.WriteFile(f, []byte(b.String()), 0o644))
	env := logEnv(argspec.Values{"file": f, "progress": "Prefill batch"}, "2026-06-18 21:00:10")
	env.Target.Unit = ""
	o, _ := runLog(t, env)
	require.Len(t, o.Recent, 50+1+9, "the newest 50, the first of their second, one for each earlier second")
	newest := o.Recent[len(o.Recent)-50:]
	for i, pl := range newest {
		require.Equal(t, float64(950+i), pl.Fields["inflight-req"], "the newest 50 are all there, in order")
	}
	for sec, pl := range o.Recent[:10] {
		require.Equal(t, utc(fmt.Sprintf("2026-06-18 21:00:%02d", sec)), pl.Time)
		require.Equal(t, float64(sec*100), pl.Fields["inflight-req"], "the first line of second %d", sec)
	}
}

func TestRateText(t *testing.T) {
	for perMinute, want := range map[float64]string{
		0: "no progress lines", 0.04: "under 0.1 lines/min", 0.5: "0.5 lines/min", 1: "1 line/min", 1.02: "1 line/min",
		1.06: "1.1 lines/min", 2: "2 lines/min", 186.24: "186.2 lines/min",
	} {
		require.Equal(t, want, rateText(perMinute), "%v per minute", perMinute)
	}
}
