package sim_test

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var (
	decodeBatchRe  = regexp.MustCompile(`\] Decode batch[ ,.]`)
	prefillBatchRe = regexp.MustCompile(`\] Prefill batch[ ,.]`)
	decodeAbortRe  = regexp.MustCompile(`Decode transfer failed for request rank=\d+ decode_req\.req\.rid='([^']*)' ` +
		`decode_req\.req\.bootstrap_room=(\d+) with exception KVTransferError\(bootstrap_room=(\d+)\): Aborted by AbortReq\.$`)
	inflightRe              = regexp.MustCompile(`#inflight-req: (\d+)`)
	prefillTransferFailedRe = regexp.MustCompile(`\] Prefill transfer failed for request `)
)

// TestWedgeScenario plays the incident: a burst of aborted in-flight transfers wedges
// a decode that runs the overlap schedule. It asserts what an operator saw, then
// that restarting both engines recovers the service.
func TestWedgeScenario(t *testing.T) {
	t.Parallel()
	d := up(t)
	router, prefill, decode := d.endpoints["router"], d.endpoints["prefill"], d.endpoints["decode"]

	healthy := chat(router, "warmup", 5*time.Second, false)
	require.NoError(t, healthy.err)
	require.Equal(t, 200, healthy.status)
	require.Eventually(t, func() bool {
		return len(grep(logLines(t, d.logPath("decode"), 0), decodeBatchRe)) > 0
	}, 5*time.Second, 20*time.Millisecond, "a healthy decode logs Decode batch lines")

	// The burst: eight real requests held in flight between the engines, all
	// cancelled at once by their clients.
	decodeMark := countLines(t, d.logPath("decode"))
	out := d.ctl(t, "fault", "pd-wedge")
	require.Contains(t, out, `"wedged":true`, "the overlap schedule is on, so the burst wedges decode")
	require.Len(t, grep(logLines(t, d.logPath("decode"), decodeMark), regexp.MustCompile(`rid='pd-wedge-burst-\d+'`)), 8)
	prefillMark := countLines(t, d.logPath("prefill"))
	genBefore := total(t, scrape(t, decode), "sglang:generation_tokens_total")

	// Alive is not working: every health endpoint says 200 ...
	for _, url := range []string{router + "/health", decode + "/health", decode + "/health_generate", prefill + "/health"} {
		require.Equalf(t, 200, httpStatus(t, url), "GET %s", url)
	}
	// ... while each chat completion hangs with zero bytes until the client gives up.
	// The probes are sequential, like the operator's, so prefill parks one at a time.
	probes := []string{"probe-a", "probe-b", "probe-c"}
	for _, rid := range probes {
		r := chat(router, rid, 800*time.Millisecond, true)
		require.Truef(t, r.timedOut, "probe %s should time out, got %+v", rid, r)
		require.Zero(t, r.bytes, "a wedged deployment returns no bytes")
		// The operator's probes were a minute apart, so each abort had reached
		// prefill before the next probe; wait for that here instead of a minute.
		require.Eventually(t, func() bool {
			var st struct {
				Inflight        int `json:"inflight"`
				InflightAborted int `json:"inflight_aborted"`
			}
			getJSON(t, prefill+"/_sim/state", &st)
			return st.Inflight == st.InflightAborted
		}, 5*time.Second, 10*time.Millisecond)
	}

	// Decode: no batch lines since the wedge; one abort line per client timeout,
	// carrying the prober's own request id, each with a distinct room.
	var lines []string
	require.Eventually(t, func() bool {
		lines = logLines(t, d.logPath("decode"), decodeMark)
		return len(grep(lines, regexp.MustCompile(`rid='probe-c'`))) == 1
	}, 5*time.Second, 20*time.Millisecond)
	require.Empty(t, grep(lines, decodeBatchRe), "a wedged decode logs no Decode batch lines")
	aborts := grep(lines, decodeAbortRe)
	require.Len(t, aborts, 8+len(probes), "the burst of 8 plus one abort per client timeout")
	rooms := map[string]bool{}
	for _, l := range aborts {
		m := decodeAbortRe.FindStringSubmatch(l)
		require.Equal(t, m[2], m[3], "the exception names the same room")
		require.False(t, rooms[m[2]], "rooms are distinct")
		rooms[m[2]] = true
	}
	for _, rid := range probes {
		require.Len(t, grep(aborts, regexp.MustCompile(`rid='`+rid+`'`)), 1, "one abort line for %s", rid)
	}

	// Prefill keeps prefilling and parks each request in flight.
	plines := logLines(t, d.logPath("prefill"), prefillMark)
	batches := grep(plines, prefillBatchRe)
	require.Len(t, batches, len(probes), "prefill still runs one batch per probe")
	for _, b := range batches[1:] {
		require.Equal(t, "1", inflightRe.FindStringSubmatch(b)[1], "the previous probe is parked: %s", b)
	}
	require.Eventually(t, func() bool {
		return sample(t, scrape(t, prefill), "sglang:num_prefill_inflight_queue_reqs", nil) == 1
	}, 5*time.Second, 20*time.Millisecond, "num_prefill_inflight_queue_reqs parks at 1")

	// Decode's counters: no tokens generated, gauges frozen at their last value,
	// failed transfers counted.
	m1 := scrape(t, decode)
	time.Sleep(300 * time.Millisecond) // three idle-refresh periods: a live gauge would have been rewritten
	m2 := scrape(t, decode)
	require.Equal(t, genBefore, total(t, m2, "sglang:generation_tokens_total"), "generation stopped")
	require.Equal(t, float64(8+len(probes)), total(t, m2, "sglang:num_transfer_failed_reqs_total"))
	for _, g := range []string{"sglang:num_running_reqs", "sglang:num_decode_transfer_queue_reqs", "sglang:num_decode_prealloc_queue_reqs", "sglang:gen_throughput"} {
		require.Equal(t, total(t, m1, g), total(t, m2, g), "%s is frozen", g)
	}

	// Clearing injected faults does not lift a wedge: it is a consequence, not a fault.
	d.ctl(t, "fault", "clear")
	require.True(t, chat(router, "probe-after-clear", 500*time.Millisecond, false).timedOut)

	// The fix: restart both engines (and the router). The service really serves again.
	oldPID := d.mainPID(t, "decode")
	d.ctl(t, "restart", "all")
	require.NotEqual(t, oldPID, d.mainPID(t, "decode"))
	restartMark := countLines(t, d.logPath("decode"))
	r := chat(router, "after-restart", 5*time.Second, true)
	require.NoError(t, r.err)
	require.Equal(t, 200, r.status)
	require.Contains(t, r.body, "data: [DONE]")
	require.Eventually(t, func() bool {
		return len(grep(logLines(t, d.logPath("decode"), restartMark), decodeBatchRe)) > 0
	}, 5*time.Second, 20*time.Millisecond, "Decode batch lines resume")
	require.Eventually(t, func() bool {
		return sample(t, scrape(t, prefill), "sglang:num_prefill_inflight_queue_reqs", nil) == 0
	}, 5*time.Second, 20*time.Millisecond)
}

// TestNoWedgeWithDisableOverlapSchedule applies the lasting fix the way an operator
// does: edit the serve scripts, restart, and check that the same burst is harmless.
func TestNoWedgeWithDisableOverlapSchedule(t *testing.T) {
	t.Parallel()
	d := up(t)
	for _, role := range []string{"prefill", "decode"} {
		path := d.dir + "/serve_" + role + ".sh"
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		anchor := "--disaggregation-mode " + role + " \\\n"
		require.Contains(t, string(b), anchor)
		edited := strings.Replace(string(b), anchor, anchor+"  --disable-overlap-schedule \\\n", 1)
		require.NoError(t, os.WriteFile(path, []byte(edited), 0o755))
	}
	d.ctl(t, "restart", "prefill")
	d.ctl(t, "restart", "decode")

	// The running process, not just the script, carries the flag.
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", d.mainPID(t, "decode")))
	require.NoError(t, err)
	require.Contains(t, strings.Split(string(cmdline), "\x00"), "--disable-overlap-schedule")
	require.NotEmpty(t, grep(logLines(t, d.logPath("decode"), 0), regexp.MustCompile(`disable_overlap_schedule=True`)))

	mark := countLines(t, d.logPath("decode"))
	out := d.ctl(t, "fault", "pd-wedge")
	require.Contains(t, out, `"wedged":false`)
	for i := range 3 {
		r := chat(d.endpoints["router"], fmt.Sprintf("after-burst-%d", i), 5*time.Second, false)
		require.NoError(t, r.err)
		require.Equal(t, 200, r.status)
		require.Positive(t, r.bytes)
	}
	lines := logLines(t, d.logPath("decode"), mark)
	require.Len(t, grep(lines, decodeAbortRe), 8, "the burst is logged")
	require.Eventually(t, func() bool {
		return len(grep(logLines(t, d.logPath("decode"), mark), decodeBatchRe)) > 0
	}, 5*time.Second, 20*time.Millisecond, "decode keeps batching")
}
