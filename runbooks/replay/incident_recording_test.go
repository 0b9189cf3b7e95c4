package replay

import (
	"flag"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/shellscript"
	"github.com/runbot/runbot/internal/step"
	"github.com/runbot/runbot/runbooks"
)

var update = flag.Bool("update", false, "rewrite the incident recording")

// The incident's fixtures, copied from the shared fixtures, and the
// recording made from them.
const (
	incidentFixtures  = "../../testdata/sglang"
	incidentRecording = "../builtin/testdata/recordings/sglang-pd-wedge/incident-2026-06-18"
)

// incidentStart is when the recorded run begins: a minute into the
// operator's probing, so that prefill's 21:04:25 batch line is the one our
// second request caused.
var incidentStart = time.Date(2026, 6, 18, 21, 4, 23, 0, time.UTC)

// TestIncidentRecordingIsCurrent builds the 2026-06-18 incident's
// recording for sglang-pd-wedge from the incident's fixtures and compares
// it with the checked-in one (`go test ./runbooks -run
// TestIncidentRecordingIsCurrent -update` rewrites it). What the fixtures
// hold is used as it is: both engines' logs, cut where each log step would
// have read them, the /metrics snapshots, the serve scripts. What they do
// not hold is said in the recording's note.
func TestIncidentRecordingIsCurrent(t *testing.T) {
	rec, rep := incidentRecordingFromFixtures(t)
	built := filepath.Join(t.TempDir(), "incident")
	require.NoError(t, rec.Save(built, rep, SaveOptions{}))
	if *update {
		require.NoError(t, os.RemoveAll(incidentRecording))
		require.NoError(t, os.CopyFS(incidentRecording, os.DirFS(built)))
	}
	want := readTree(t, built)
	got := readTree(t, incidentRecording)
	require.Equal(t, keys(want), keys(got), "files of %s: run with -update", incidentRecording)
	for name, w := range want {
		require.Equal(t, w, got[name], "%s is stale: run go test ./runbooks/replay -run TestIncidentRecordingIsCurrent -update", name)
	}
}

func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = string(b)
		return nil
	}))
	return out
}

func keys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }

// incidentRole is one role of the incident's deployment (fixtures README).
type incidentRole struct {
	unit, script, log string
	pid, port         int
	since             time.Time
}

var incidentRoles = map[string]incidentRole{
	"router":  {unit: "sglang-dsv4-router", pid: 47650, port: 30001, since: time.Date(2026, 6, 18, 19, 40, 12, 0, time.UTC)},
	"prefill": {unit: "sglang-dsv4-prefill", script: "/root/serve_dsv4_prefill.sh", log: "/var/log/sglang/prefill.log", pid: 47911, port: 30100, since: time.Date(2026, 6, 18, 19, 40, 31, 0, time.UTC)},
	"decode":  {unit: "sglang-dsv4-decode", script: "/root/serve_dsv4_decode.sh", log: "/var/log/sglang/decode.log", pid: 48213, port: 30200, since: time.Date(2026, 6, 18, 19, 40, 33, 0, time.UTC)},
}

const incidentNote = "The 2026-06-18 incident, built by TestIncidentRecordingIsCurrent from the incident's fixtures " +
	"(testdata/sglang, the same files the checks and the simulator are tested against): the engines' logs as each log step would have read them between " +
	"21:04:30 and 21:04:59 UTC, the /metrics snapshots of 21:05:00 and the serve scripts are the fixtures' own. " +
	"Not in the fixtures, and taken from the incident summary: the probes (/health 200; chat completions with " +
	"0 bytes until the client gave up), the units' properties (systemd said both engines were active), and that " +
	"the one /metrics snapshot stands for every sample (decode logged no batch for 27 minutes, so its counters " +
	"could not move). Not observed at all, and so not recorded: the engines' own /health (the case names the step unrecorded), " +
	"and /server_info (the flag step says it could not be read, and the command lines stand)."

func incidentRecordingFromFixtures(t *testing.T) (*Recording, *runbooks.Report) {
	t.Helper()
	fixture := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(incidentFixtures, name))
		require.NoError(t, err)
		return b
	}
	at := func(d time.Duration) time.Time { return incidentStart.Add(d) }
	ms := time.Millisecond
	rec := NewRecording()
	rec.doc.Note = incidentNote
	rec.doc.Started, rec.doc.Finished, rec.doc.VerdictAt = at(0), at(36100*ms), at(36100*ms)
	for _, role := range []string{"router", "prefill", "decode"} {
		r := incidentRoles[role]
		url := fmt.Sprintf("http://127.0.0.1:%d", r.port)
		rec.doc.Targets = append(rec.doc.Targets, recordedTarget{
			Role: role, Deployment: "dsv4", Host: "gpu-node-01", Unit: r.unit, URL: url, MetricsURL: url + "/metrics",
			LaunchScript: r.script, LogFile: r.log, ServiceManager: "systemd",
		})
	}
	add := func(od *observedDoc) {
		od.Host, od.Status = "gpu-node-01", step.OK
		key := runKey(od.Step, od.Target)
		rec.runs[key] = od
		rec.order = append(rec.order, key)
	}
	unit := func(role string) recordedUnit {
		r := incidentRoles[role]
		return recordedUnit{Unit: r.unit, ActiveState: "active", SubState: "running", LoadState: "loaded", Result: "success", MainPID: r.pid, ActiveEnter: r.since}
	}
	command := func(line string, out []byte, started time.Time) recordedCommand {
		return recordedCommand{Line: line, Started: started, Duration: 20 * ms, stdout: out}
	}

	// The probes: /health answers; the chat completion, and a second one
	// two seconds later, get no byte until they give up.
	probe := func(id, path string, start time.Time, status int, total time.Duration, phase, errText string) {
		p := recordedProbe{URL: "http://127.0.0.1:30001" + path, RequestID: "rb-incident-" + id, Started: start, Status: status,
			Connected: true, ConnectTime: ms, Total: total, Phase: phase, Error: errText, Outcome: "ok"}
		if phase != "none" {
			p.Outcome, p.TimedOut = "timeout", true
		} else {
			p.FirstByte = 3 * ms
		}
		add(&observedDoc{Step: id, Check: "http_probe", Target: "router", Started: start.Add(-ms), Duration: total + ms, Clock: []time.Time{start}, Probes: []recordedProbe{p}})
	}
	probe("health", "/health", at(ms), 200, 3*ms, "none", "")
	probe("chat", "/v1/chat/completions", at(2*ms), 0, 35*time.Second, "first_byte", "no first byte within 35s")
	probe("chat_next", "/v1/chat/completions", at(2002*ms), 0, 5*time.Second, "first_byte", "no first byte within 5s")

	// The counters: the one snapshot of each engine, at every sample.
	scrapes := func(id, role string, n int, body []byte) {
		od := &observedDoc{Step: id, Check: "metrics_sample", Target: role, Started: at(3 * ms), Duration: time.Duration(n-1)*2010*ms + 20*ms}
		for i := range n {
			when := at(5*ms + time.Duration(i)*2010*ms)
			od.Clock = append(od.Clock, when)
			od.Scrapes = append(od.Scrapes, recordedScrape{URL: fmt.Sprintf("http://127.0.0.1:%d/metrics", incidentRoles[role].port), Time: when, body: body})
		}
		add(od)
	}
	scrapes("decode_output", "decode", 4, fixture("metrics-decode-wedged.prom"))
	scrapes("counters", "prefill", 5, fixture("metrics-prefill-wedged.prom"))
	scrapes("counters", "decode", 5, fixture("metrics-decode-wedged.prom"))

	// The logs: the early reads when the second request gave up (+7 s),
	// the late ones when the first did (+35 s): decode's silence at once,
	// the failure lines after waiting 9 s for the echoes (SGLang logs a
	// disconnected client's abort 2 to 8 s after it gave up).
	for _, l := range []struct {
		id, role string
		start    time.Duration
		waited   time.Duration
	}{
		{"decode_early", "decode", 7010 * ms, 0}, {"prefill_early", "prefill", 7010 * ms, 0},
		{"last_batch", "decode", 35010 * ms, 0}, {"decode_aborts", "decode", 35010 * ms, 9 * time.Second},
		{"prefill_log", "prefill", 35010 * ms, 9 * time.Second},
	} {
		now := at(l.start + l.waited)
		log := logUntil(fixture(l.role+"-wedged.log"), now)
		add(&observedDoc{Step: l.id, Check: "log_progress", Target: l.role, Started: at(l.start), Duration: l.waited + 25*ms,
			Clock:    []time.Time{at(l.start), now},
			Commands: []recordedCommand{command("tail -c 8388608 "+incidentRoles[l.role].log, log, now)},
			Units:    []recordedUnit{unit(l.role)}})
	}

	// The serve scripts, read by grep_config and flag, and the running
	// processes' argv: the scripts' exec lines, as the kernel keeps them.
	for _, role := range []string{"prefill", "decode"} {
		r := incidentRoles[role]
		script := fixture(filepath.Base(r.script))
		add(&observedDoc{Step: "backend", Check: "grep_config", Target: role, Started: at(2 * ms), Duration: 30 * ms,
			Commands: []recordedCommand{command("cat -- "+r.script, script, at(3*ms))}})
		argv := execArgv(t, string(script))
		add(&observedDoc{Step: "overlap", Check: "flag", Target: role, Started: at(2 * ms), Duration: 60 * ms,
			Commands: []recordedCommand{
				// Written days before the units started: no drift.
				command("stat -c %Y -- "+r.script+" && cat -- "+r.script, append([]byte("1781547600\n"), script...), at(3*ms)),
				command(fmt.Sprintf("tr '\\0' '\\n' < /proc/%d/cmdline", r.pid), []byte(strings.Join(argv, "\n")+"\n"), at(40*ms)),
			},
			Units: []recordedUnit{unit(role)}})
	}
	for _, role := range []string{"router", "prefill", "decode"} {
		add(&observedDoc{Step: "units", Check: "unit_state", Target: role, Started: at(2 * ms), Duration: 40 * ms,
			Clock: []time.Time{at(40 * ms)}, Units: []recordedUnit{unit(role)}})
	}
	rep := &runbooks.Report{RunID: "incident-2026-06-18", Runbook: "sglang-pd-wedge", Params: map[string]string{
		"deployment": "dsv4", "model": "deepseek-v4", "probe_timeout": "35s", "sample_interval": "2s",
		"samples": "5", "slow_first_token": "5s", "stall_after": "60s",
	}}
	return rec, rep
}

// logUntil returns the journal lines (short-iso, as the fixtures are) up
// to and including the second of now: what a read at that moment found.
func logUntil(log []byte, now time.Time) []byte {
	cut := now.UTC().Format("2006-01-02T15:04:05")
	var b strings.Builder
	for line := range strings.Lines(string(log)) {
		if len(line) >= 19 && line[:19] <= cut {
			b.WriteString(line)
		}
	}
	return []byte(b.String())
}

// execArgv returns the arguments of the script's exec line, the process
// it becomes.
func execArgv(t *testing.T, script string) []string {
	t.Helper()
	sc := shellscript.Parse(script)
	for _, cmd := range sc.AllCommands() {
		words := sc.ArgWords(cmd)
		if len(words) > 1 && words[0].Val == "exec" {
			var argv []string
			for _, w := range words[1:] {
				argv = append(argv, w.Val)
			}
			return argv
		}
	}
	t.Fatalf("no exec line in the serve script")
	return nil
}
