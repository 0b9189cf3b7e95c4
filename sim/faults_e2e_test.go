package sim_test

import (
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestDecodeCrash: the decode process exits non-zero; the unit shows failed, the
// router answers errors fast instead of hanging, and a restart recovers.
func TestDecodeCrash(t *testing.T) {
	t.Parallel()
	d := up(t)
	out := d.ctl(t, "fault", "decode-crash")
	require.Contains(t, out, `"ok":true`)
	st := d.show(t, "decode")
	require.Equal(t, "failed", st["ActiveState"])
	require.Equal(t, "failed", st["SubState"])
	require.Equal(t, "0", st["MainPID"])
	require.Equal(t, "1", st["ExecMainStatus"])
	require.Equal(t, "exit-code", st["Result"])
	lines := logLines(t, d.logPath("decode"), 0)
	require.NotEmpty(t, grep(lines, regexp.MustCompile(`^\[[0-9-]+ [0-9:]+\] Received sigquit from a child process\. It usually means the child failed\.$`)))
	require.Empty(t, grep(lines, regexp.MustCompile(`Traceback`)))

	r := chat(d.endpoints["router"], "after-crash", 5*time.Second, false)
	require.NoError(t, r.err)
	require.Equal(t, http.StatusServiceUnavailable, r.status, "the router fails fast: %s", r.body)
	require.Equal(t, 200, httpStatus(t, d.endpoints["router"]+"/health"), "router liveness is not worker health")

	d.ctl(t, "restart", "decode")
	require.Equal(t, "active", d.show(t, "decode")["ActiveState"])
	require.Equal(t, 200, chat(d.endpoints["router"], "after-restart", 5*time.Second, false).status)
}

// TestRouterDown: the entry point refuses connections while both engines stay healthy.
func TestRouterDown(t *testing.T) {
	t.Parallel()
	d := up(t, "--scenario", "router-down")
	_, err := http.Get(d.endpoints["router"] + "/health")
	require.Error(t, err, "nothing listens on the router port")
	require.Equal(t, "failed", d.show(t, "router")["ActiveState"])
	require.Equal(t, 200, httpStatus(t, d.endpoints["decode"]+"/health"))
	require.Equal(t, 200, httpStatus(t, d.endpoints["prefill"]+"/health"))

	d.ctl(t, "start", "router")
	require.Equal(t, 200, chat(d.endpoints["router"], "", 5*time.Second, false).status)
}

// TestSlow: slow but working — a high time to first token, and batches continue.
func TestSlow(t *testing.T) {
	t.Parallel()
	d := up(t)
	d.ctl(t, "fault", "slow", "--ttft", "1500ms")
	mark := countLines(t, d.logPath("prefill"))
	r := chat(d.endpoints["router"], "slow-1", 10*time.Second, true)
	require.NoError(t, r.err)
	require.Equal(t, 200, r.status)
	require.GreaterOrEqual(t, r.ttfb, 1500*time.Millisecond, "time to first byte carries the delay")
	require.Contains(t, r.body, "data: [DONE]")
	require.Len(t, grep(logLines(t, d.logPath("prefill"), mark), prefillBatchRe), 1, "prefill batches continue")
	require.Eventually(t, func() bool {
		return len(grep(logLines(t, d.logPath("decode"), 0), decodeBatchRe)) > 0
	}, 5*time.Second, 20*time.Millisecond, "decode batches continue")

	d.ctl(t, "fault", "clear")
	r = chat(d.endpoints["router"], "fast-again", 10*time.Second, true)
	require.NoError(t, r.err)
	require.Less(t, r.ttfb, 1500*time.Millisecond)
}

// TestStaleSample: one scrape of an idle decode reads num_running_reqs 2 (the
// incident's "zombie requests"); the next scrapes read the real 0. The fault is
// injected both ways the simulator offers: through the admin endpoint (a scenario)
// and by a start flag.
func TestStaleSample(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"scenario", []string{"--scenario", "stale-sample"}},
		{"start flag", []string{"--engine-arg=--sim-fault", "--engine-arg=stale-sample"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := up(t, tc.args...)
			decode := d.endpoints["decode"]
			first := scrape(t, decode)
			require.Equal(t, 2.0, sample(t, first, "sglang:num_running_reqs", map[string]string{"dp_rank": "0"}))
			require.Equal(t, 0.0, sample(t, first, "sglang:gen_throughput", map[string]string{"dp_rank": "0"}))
			for range 3 {
				require.Equal(t, 0.0, total(t, scrape(t, decode), "sglang:num_running_reqs"), "repeated sampling shows the truth")
			}
		})
	}
}

// TestRestartOnFailure: with Restart=on-failure the supervisor brings a crashed decode
// back and counts it in NRestarts, as systemd does.
func TestRestartOnFailure(t *testing.T) {
	t.Parallel()
	d := up(t, "--restart", "on-failure")
	old := d.mainPID(t, "decode")
	d.ctl(t, "fault", "decode-crash", "--exit-code", "3")
	require.Eventually(t, func() bool {
		st := d.show(t, "decode")
		return st["NRestarts"] == "1" && st["ActiveState"] == "active"
	}, 10*time.Second, 20*time.Millisecond)
	require.NotEqual(t, old, d.mainPID(t, "decode"))
	require.Eventually(t, func() bool {
		return chat(d.endpoints["router"], "", 5*time.Second, false).status == 200
	}, 10*time.Second, 50*time.Millisecond)
}

// TestLogFormatFlag: --log-format switches the batch-line wording for parser tests.
func TestLogFormatFlag(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		era, prefill, decode string
	}{
		{"2025-mid", `\] Prefill batch\. #new-seq: \d+, .*#transferring-req: \d+, $`, `\] Decode batch\. #running-req: \d+, .*#queue-req: 0, $`},
		{"2025-late", `\] Prefill batch, .*#prealloc-req: \d+, #inflight-req: \d+, input throughput \(token/s\): [\d.]+, $`, `\] Decode batch, .*cuda graph: True, .*#queue-req: 0, $`},
		{"2026-late", `^\[[\d-]+ [\d:]+\.\d{3} TP0\] Prefill batch, .*#bootstrap-req: \d+, #inflight-req: \d+, #optimistic-req: 0, `, `^\[[\d-]+ [\d:]+\.\d{3} DP\d TP\d\] Decode batch, `},
	} {
		t.Run(tc.era, func(t *testing.T) {
			t.Parallel()
			d := up(t, "--log-format", tc.era)
			require.Equal(t, 200, chat(d.endpoints["router"], "", 5*time.Second, false).status)
			require.Eventually(t, func() bool {
				return len(grep(logLines(t, d.logPath("decode"), 0), regexp.MustCompile(tc.decode))) > 0
			}, 5*time.Second, 20*time.Millisecond)
			require.NotEmpty(t, grep(logLines(t, d.logPath("prefill"), 0), regexp.MustCompile(tc.prefill)))
		})
	}
}

// TestPrefillStall: prefill's forward pass hangs. Requests get no bytes, prefill
// logs no further batches, and its /health turns 503 after the health timeout.
func TestPrefillStall(t *testing.T) {
	t.Parallel()
	d := up(t, "--health-timeout", "500ms", "--scenario", "prefill-stall")
	router, prefill := d.endpoints["router"], d.endpoints["prefill"]
	mark := countLines(t, d.logPath("prefill"))
	for _, rid := range []string{"stall-1", "stall-2"} {
		r := chat(router, rid, 700*time.Millisecond, false)
		require.True(t, r.timedOut)
		require.Zero(t, r.bytes)
	}
	require.Len(t, grep(logLines(t, d.logPath("prefill"), mark), prefillBatchRe), 1,
		"the stuck batch is the last one logged")
	require.Equal(t, http.StatusServiceUnavailable, httpStatus(t, prefill+"/health"))
	require.NotEmpty(t, grep(logLines(t, d.logPath("prefill"), mark),
		regexp.MustCompile(`Health check failed\. Server couldn't get a response from detokenizer for last 0\.5 seconds`)))
	require.Equal(t, 200, httpStatus(t, d.endpoints["decode"]+"/health"), "decode is fine")

	d.ctl(t, "restart", "prefill")
	require.Equal(t, 200, httpStatus(t, prefill+"/health"))
	require.Equal(t, 200, chat(router, "after-restart", 5*time.Second, false).status)
}
