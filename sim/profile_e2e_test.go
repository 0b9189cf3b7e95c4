package sim_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Tests of `up --profile` and of the knobs for what varies within a build. They check
// what an operator (or a runbook) would: log lines, endpoints, metric names, scripts.

// httpGet returns the status, body and content type of a GET.
func httpGet(tb testing.TB, url string) (int, string, string) {
	tb.Helper()
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	require.NoError(tb, err)
	defer func() { _ = resp.Body.Close() }() // read fully below
	b, err := io.ReadAll(resp.Body)
	require.NoError(tb, err)
	return resp.StatusCode, string(b), resp.Header.Get("Content-Type")
}

// chatRID sends one non-streaming chat completion with an optional X-Request-Id
// header and body "rid", giving up after timeout like a client.
func chatRID(baseURL, header, bodyRID string, maxTokens int, timeout time.Duration) chatResult {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	body := map[string]any{"model": "deepseek-v4", "messages": []any{map[string]any{"role": "user", "content": "probe"}}, "max_tokens": maxTokens}
	if bodyRID != "" {
		body["rid"] = bodyRID
	}
	b, _ := json.Marshal(body)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, baseURL+"/v1/chat/completions", strings.NewReader(string(b)))
	req.Header.Set("Content-Type", "application/json")
	if header != "" {
		req.Header.Set("X-Request-Id", header)
	}
	return sendChat(ctx, req)
}

// waitLine waits until a line matching re appears in a role's log after line from,
// and returns it.
func waitLine(tb testing.TB, d *deployment, role string, from int, re *regexp.Regexp, within time.Duration) string {
	tb.Helper()
	var found string
	require.Eventuallyf(tb, func() bool {
		if m := grep(logLines(tb, d.logPath(role), from), re); len(m) > 0 {
			found = m[0]
			return true
		}
		return false
	}, within, 20*time.Millisecond, "%s log: no line matching %s", role, re)
	return found
}

func readScript(tb testing.TB, d *deployment, role string) string {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(d.dir, "serve_"+role+".sh"))
	require.NoError(tb, err)
	return string(b)
}

// TestProfiles starts each build profile and checks what differs between builds:
// the batch-line wording, the router's /health, the server-info endpoints and the
// metric names.
func TestProfiles(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		profile          string
		decode, prefill  string
		routerHealth     string
		serverInfo       bool
		inflight         string
		bootstrap        string
		realtime         bool
		engineTypeDecode string
	}{
		{"2025-mid", `\] Decode batch\. #running-req: \d+, .*#queue-req: 0, $`, `\] Prefill batch\. #new-seq: .*#transferring-req: \d+, $`,
			"All servers healthy", false, "sglang:num_prefill_infight_queue_reqs", "sglang:num_prefill_prealloc_queue_reqs", false, "unified"},
		{"2025-late", `\] Decode batch, .*cuda graph: True, .*#queue-req: 0, $`, `\] Prefill batch, .*#prealloc-req: \d+, #inflight-req: \d+, input throughput \(token/s\): [\d.]+, $`,
			"All servers healthy", true, "sglang:num_prefill_inflight_queue_reqs", "sglang:num_prefill_prealloc_queue_reqs", false, "decode"},
		{"2026-mid", `\] Decode batch, .*#queue-req: 0$`, `\] Prefill batch, .*#pending-token: \d+, #prealloc-req: \d+, #inflight-req: \d+, cuda graph: False, input throughput \(token/s\): [\d.]+$`,
			"OK", true, "sglang:num_prefill_inflight_queue_reqs", "sglang:num_prefill_prealloc_queue_reqs", true, "decode"},
		{"2026-late", `\] Decode batch, .*#queue-req: 0$`, `\] Prefill batch, .*#bootstrap-req: \d+, #inflight-req: \d+, #optimistic-req: 0, `,
			"OK", true, "sglang:num_prefill_inflight_queue_reqs", "sglang:num_prefill_bootstrap_queue_reqs", true, "decode"},
	} {
		t.Run(tc.profile, func(t *testing.T) {
			t.Parallel()
			d := up(t, "--profile", tc.profile)
			router, prefill, decode := d.endpoints["router"], d.endpoints["prefill"], d.endpoints["decode"]
			require.Contains(t, readScript(t, d, "decode"), "--sim-profile "+tc.profile)
			require.Contains(t, readScript(t, d, "router"), "--sim-profile "+tc.profile)

			require.Equal(t, 200, chat(router, "", 5*time.Second, false).status)
			waitLine(t, d, "decode", 0, regexp.MustCompile(tc.decode), 5*time.Second)
			waitLine(t, d, "prefill", 0, regexp.MustCompile(tc.prefill), 5*time.Second)

			code, body, _ := httpGet(t, router+"/health")
			require.Equal(t, 200, code)
			require.Equal(t, tc.routerHealth, body)

			// /server_info exists from late 2025; /get_server_info always, warning once
			// /server_info is the canonical path.
			mark := countLines(t, d.logPath("decode"))
			code, body, _ = httpGet(t, decode+"/server_info")
			if tc.serverInfo {
				require.Equal(t, 200, code)
				require.Contains(t, body, `"disable_overlap_schedule":false`)
			} else {
				require.Equal(t, 404, code)
				require.JSONEq(t, `{"detail":"Not Found"}`, body)
			}
			code, body, _ = httpGet(t, decode+"/get_server_info")
			require.Equal(t, 200, code)
			require.Contains(t, body, `"disaggregation_mode":"decode"`)
			deprecated := grep(logLines(t, d.logPath("decode"), mark), regexp.MustCompile(
				`^\[[\d-]+ [\d:.]+\] Endpoint '/get_server_info' is deprecated and will be removed in a future version\. Please use '/server_info' instead\.$`))
			require.Len(t, deprecated, map[bool]int{true: 1, false: 0}[tc.serverInfo])

			pm := scrape(t, prefill)
			require.Contains(t, pm, tc.inflight)
			require.Contains(t, pm, tc.bootstrap)
			for _, other := range []string{"sglang:num_prefill_infight_queue_reqs", "sglang:num_prefill_inflight_queue_reqs"} {
				if other != tc.inflight {
					require.NotContains(t, pm, other)
				}
			}
			dm := scrape(t, decode)
			require.Equal(t, tc.engineTypeDecode, labelValue(dm["sglang:num_running_reqs"].GetMetric()[0], "engine_type"))
			if tc.realtime {
				require.Positive(t, sample(t, dm, "sglang:realtime_tokens_total", map[string]string{"mode": "decode"}))
				require.Positive(t, sample(t, pm, "sglang:realtime_tokens_total", map[string]string{"mode": "prefill_compute"}))
			} else {
				require.NotContains(t, dm, "sglang:realtime_tokens_total")
				require.NotContains(t, pm, "sglang:realtime_tokens_total")
			}
		})
	}
}

// TestRouterHealthByProfile: the 2025 sgl-router's /health follows its background
// health checks of the workers; the 2026 gateway's /health answers "OK" regardless.
// /workers shows the same check either way.
func TestRouterHealthByProfile(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		profile     string
		downCode    int
		downBody    func(decode string) string
		healthyBody string
	}{
		{"2025-late", 503, func(decode string) string { return `Unhealthy servers: ["Decode: ` + decode + `"]` }, "All servers healthy"},
		{"2026-mid", 200, func(string) string { return "OK" }, "OK"},
	} {
		t.Run(tc.profile, func(t *testing.T) {
			t.Parallel()
			d := up(t, "--profile", tc.profile, "--router-arg", "--health-check-interval-secs", "--router-arg", "1",
				"--router-arg", "--health-failure-threshold", "--router-arg", "2", "--router-arg", "--health-success-threshold", "--router-arg", "2")
			router, decode := d.endpoints["router"], d.endpoints["decode"]
			decodeHealthy := func() bool {
				var ws struct {
					Workers []struct {
						URL       string `json:"url"`
						IsHealthy bool   `json:"is_healthy"`
					} `json:"workers"`
				}
				getJSON(t, router+"/workers", &ws)
				for _, w := range ws.Workers {
					if w.URL == decode {
						return w.IsHealthy
					}
				}
				t.Fatalf("decode %s not among the router's workers", decode)
				return false
			}
			code, body, _ := httpGet(t, router+"/health")
			require.Equal(t, 200, code)
			require.Equal(t, tc.healthyBody, body)
			require.True(t, decodeHealthy())

			d.ctl(t, "stop", "decode")
			require.Eventually(t, func() bool { return !decodeHealthy() }, 10*time.Second, 100*time.Millisecond,
				"two failed checks a second apart mark decode unhealthy")
			code, body, _ = httpGet(t, router+"/health")
			require.Equal(t, tc.downCode, code)
			require.Equal(t, tc.downBody(decode), body)

			d.ctl(t, "start", "decode")
			require.Eventually(t, decodeHealthy, 10*time.Second, 100*time.Millisecond, "two passed checks bring it back")
			code, body, _ = httpGet(t, router+"/health")
			require.Equal(t, 200, code)
			require.Equal(t, tc.healthyBody, body)
		})
	}
}

// TestTransferBackendFailureText: a client timeout is logged by both engines; on NIXL
// the exception is a bare "NIXL KVReceiver/KVSender Exception" (no "Aborted"), on
// mooncake it names the reason. The scripts carry the matching backend and env.
func TestTransferBackendFailureText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		backend, decodeExc, prefillExc string
	}{
		{"nixl", `with exception NIXL KVReceiver Exception$`, `with exception NIXL KVSender Exception$`},
		{"mooncake", `with exception KVTransferError\(bootstrap_room=(\d+)\): Aborted by AbortReq\.$`, `with exception KVTransferError\(bootstrap_room=(\d+)\): Aborted by AbortReq\.$`},
	} {
		t.Run(tc.backend, func(t *testing.T) {
			t.Parallel()
			d := up(t, "--transfer-backend", tc.backend)
			for _, role := range []string{"prefill", "decode"} {
				script := readScript(t, d, role)
				require.Contains(t, script, "--disaggregation-transfer-backend "+tc.backend)
				require.Equal(t, tc.backend == "nixl", strings.Contains(script, "export SGLANG_DISAGGREGATION_NIXL_BACKEND=UCX\n"))
				require.Equal(t, tc.backend == "nixl", strings.Contains(script, "UCX_NET_DEVICES"))
				require.Equal(t, tc.backend == "mooncake", strings.Contains(script, "--disaggregation-ib-device"))
			}
			d.ctl(t, "fault", "slow", "--ttft", "1s")
			dmark, pmark := countLines(t, d.logPath("decode")), countLines(t, d.logPath("prefill"))
			r := chat(d.endpoints["router"], "to-1", 300*time.Millisecond, false)
			require.True(t, r.timedOut)
			dl := waitLine(t, d, "decode", dmark, regexp.MustCompile(`\] Decode transfer failed for request rank=\d+ decode_req\.req\.rid='to-1' `), 5*time.Second)
			require.Regexp(t, tc.decodeExc, dl)
			pl := waitLine(t, d, "prefill", pmark, regexp.MustCompile(`\] Prefill transfer failed for request rank=\d+ req\.rid='to-1' `), 5*time.Second)
			require.Regexp(t, tc.prefillExc, pl)
			if tc.backend == "nixl" {
				require.NotContains(t, dl, "Aborted")
				require.NotContains(t, pl, "Aborted")
			}
		})
	}
}

// TestMetricsOff: without --enable-metrics the engine has no /metrics route, which
// FastAPI answers with 404 {"detail":"Not Found"}.
func TestMetricsOff(t *testing.T) {
	t.Parallel()
	d := up(t, "--metrics", "off")
	for _, role := range []string{"prefill", "decode"} {
		require.NotContains(t, readScript(t, d, role), "--enable-metrics")
		code, body, ctype := httpGet(t, d.endpoints[role]+"/metrics")
		require.Equal(t, 404, code)
		require.JSONEq(t, `{"detail":"Not Found"}`, body)
		require.Equal(t, "application/json", ctype)
		require.NotEmpty(t, grep(logLines(t, d.logPath(role), 0), regexp.MustCompile(`server_args=ServerArgs\(.*enable_metrics=False`)))
	}
	require.Equal(t, 200, chat(d.endpoints["router"], "", 5*time.Second, false).status, "serving does not need metrics")
}

// TestRequestIDs: real engines mint their own rid and ignore X-Request-Id; a body
// "rid" would be honoured, but both routers drop it from chat requests (the engine
// side is TestRequestIDModes). With --request-ids client the header is the rid.
func TestRequestIDs(t *testing.T) {
	t.Parallel()
	minted := `[0-9a-f]{32}`
	for _, tc := range []struct {
		name, profile, mode string
		probes              []struct{ header, body, rid string }
	}{
		{"gateway engine ids", "2026-mid", "engine", []struct{ header, body, rid string }{
			{"hdr-1", "", minted}, {"", "body-1", minted}}},
		{"sgl-router engine ids", "2025-late", "engine", []struct{ header, body, rid string }{
			{"hdr-2", "body-2", minted}}},
		{"client ids", "2026-mid", "client", []struct{ header, body, rid string }{
			{"hdr-4", "", "hdr-4"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := up(t, "--profile", tc.profile, "--request-ids", tc.mode)
			require.Contains(t, readScript(t, d, "decode"), "--sim-request-ids "+tc.mode)
			d.ctl(t, "fault", "slow", "--ttft", "3s")
			for _, p := range tc.probes {
				mark := countLines(t, d.logPath("decode"))
				r := chatRID(d.endpoints["router"], p.header, p.body, 4, 300*time.Millisecond)
				require.True(t, r.timedOut)
				line := waitLine(t, d, "decode", mark, regexp.MustCompile(`Decode transfer failed for request`), 5*time.Second)
				require.Regexp(t, `decode_req\.req\.rid='`+p.rid+`' `, line, "header %q body %q", p.header, p.body)
			}
		})
	}
}

// TestAbortLatency measures the delay between a client's disconnect and each engine
// processing the abort: SGLang notices a disconnect seconds later (2-4 s behind the
// 2025 router, 4-8 s behind the gateway). Decode is wedged so that prefill parks the
// request in flight, where the abort shows as inflight_aborted.
func TestAbortLatency(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		args     []string
		min, max time.Duration
	}{
		{"explicit 2s-4s", []string{"--abort-latency", "2s-4s"}, 2 * time.Second, 4 * time.Second},
		{"2026-mid default (gateway)", []string{"--abort-latency", ""}, 4 * time.Second, 8 * time.Second},
		{"2025-mid default (sgl-router)", []string{"--profile", "2025-mid", "--abort-latency", ""}, 2 * time.Second, 4 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := up(t, tc.args...)
			require.Contains(t, d.ctl(t, "fault", "pd-wedge", "--synthetic"), `"wedged":true`)
			mark := countLines(t, d.logPath("decode"))
			r := chat(d.endpoints["router"], "late-1", 500*time.Millisecond, false)
			require.True(t, r.timedOut)
			disconnect := time.Now()
			var decodeAt, prefillAt time.Time
			abortRe := regexp.MustCompile(`Decode transfer failed for request rank=\d+ decode_req\.req\.rid='late-1' `)
			require.Eventually(t, func() bool {
				if decodeAt.IsZero() && len(grep(logLines(t, d.logPath("decode"), mark), abortRe)) > 0 {
					decodeAt = time.Now()
				}
				if prefillAt.IsZero() {
					var st struct {
						InflightAborted int `json:"inflight_aborted"`
					}
					getJSON(t, d.endpoints["prefill"]+"/_sim/state", &st)
					if st.InflightAborted == 1 {
						prefillAt = time.Now()
					}
				}
				return !decodeAt.IsZero() && !prefillAt.IsZero()
			}, tc.max+3*time.Second, 20*time.Millisecond)
			for role, at := range map[string]time.Time{"decode": decodeAt, "prefill": prefillAt} {
				delay := at.Sub(disconnect)
				t.Logf("%s processed the abort %s after the disconnect", role, delay.Round(10*time.Millisecond))
				require.GreaterOrEqual(t, delay, tc.min-100*time.Millisecond, role)
				require.LessOrEqual(t, delay, tc.max+500*time.Millisecond, role)
			}
		})
	}
}

// TestLogTimeZone: log line prefixes are host-local time, like Python's logging.
func TestLogTimeZone(t *testing.T) {
	t.Parallel()
	before := time.Now()
	d := up(t, "--log-tz", "Asia/Kolkata")
	require.Contains(t, readScript(t, d, "decode"), "export TZ=Asia/Kolkata\n")
	first := logLines(t, d.logPath("decode"), 0)[0]
	m := regexp.MustCompile(`^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\] server_args=`).FindStringSubmatch(first)
	require.NotNil(t, m, first)
	ist, err := time.LoadLocation("Asia/Kolkata")
	require.NoError(t, err)
	stamp, err := time.ParseInLocation("2006-01-02 15:04:05", m[1], ist)
	require.NoError(t, err)
	require.WithinDuration(t, before, stamp, 30*time.Second, "the stamp is IST wall time (%s)", m[1])
	asUTC, err := time.ParseInLocation("2006-01-02 15:04:05", m[1], time.UTC)
	require.NoError(t, err)
	require.InDelta(t, 5.5, asUTC.Sub(before).Hours(), 0.05, "IST is UTC+5:30, not UTC")
}

// TestOverlapKnob: however the overlap schedule is turned off (the flag, a --config
// file, or SGLang forcing it for EAGLE), the effective value is in the startup
// server_args and /server_info, and the causal wedge model uses it: the pd-wedge
// burst wedges only a decode whose overlap schedule is really on. The deployments use
// engine-minted request ids, which the burst must follow by its tag.
func TestOverlapKnob(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		overlap string
		off     bool
		args    []string
	}{
		// "on" also keeps a real abort latency: a burst of simultaneous timeouts is
		// still aborted together, seconds later, and still wedges.
		{"on", false, []string{"--abort-latency", "2s-4s"}},
		{"flag", true, nil},
		{"config", true, nil},
		{"forced", true, nil},
	} {
		t.Run(tc.overlap, func(t *testing.T) {
			t.Parallel()
			d := up(t, append([]string{"--overlap", tc.overlap, "--request-ids", "engine"}, tc.args...)...)
			script := readScript(t, d, "decode")
			require.Equal(t, tc.overlap == "flag", strings.Contains(script, "\n  --disable-overlap-schedule"))
			require.Equal(t, tc.overlap == "config", strings.Contains(script, "--config "+filepath.Join(d.dir, "decode-config.yaml")))
			require.Equal(t, tc.overlap == "forced", strings.Contains(script, "--speculative-algorithm EAGLE"))
			if tc.overlap == "config" {
				b, err := os.ReadFile(filepath.Join(d.dir, "decode-config.yaml"))
				require.NoError(t, err)
				require.Contains(t, string(b), "\ndisable-overlap-schedule: true\n")
				cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", d.mainPID(t, "decode")))
				require.NoError(t, err)
				require.NotContains(t, string(cmdline), "disable-overlap-schedule", "the flag is not on the command line")
			}

			lines := logLines(t, d.logPath("decode"), 0)
			want := fmt.Sprintf("disable_overlap_schedule=%s", map[bool]string{true: "True", false: "False"}[tc.off])
			require.Len(t, grep(lines, regexp.MustCompile(`\] server_args=ServerArgs\(.*`+want)), 1)
			forcedRe := regexp.MustCompile(`^\[[\d-]+ [\d:.]+\] Overlap scheduler is disabled because of using eagle3 or standalone speculative decoding\.$`)
			require.Equal(t, tc.overlap == "forced", len(grep(lines, forcedRe)) == 1)
			for _, path := range []string{"/server_info", "/get_server_info"} {
				var info struct {
					DisableOverlap bool    `json:"disable_overlap_schedule"`
					Spec           *string `json:"speculative_algorithm"`
				}
				getJSON(t, d.endpoints["decode"]+path, &info)
				require.Equal(t, tc.off, info.DisableOverlap, path)
				require.Equal(t, tc.overlap == "forced", info.Spec != nil && *info.Spec == "EAGLE", path)
			}

			out := d.ctl(t, "fault", "pd-wedge")
			require.Contains(t, out, fmt.Sprintf(`"wedged":%t`, !tc.off), out)
			if tc.off {
				require.Equal(t, 200, chat(d.endpoints["router"], "", 5*time.Second, false).status, "decode still serves")
			}
		})
	}
}

// TestGenerationTokensCountFinishedRequests: sglang:generation_tokens_total is the
// tokenizer's, moved once per finished request; the live per-iteration counter is
// realtime_tokens_total{mode="decode"}.
func TestGenerationTokensCountFinishedRequests(t *testing.T) {
	t.Parallel()
	d := up(t)
	router, decode, prefill := d.endpoints["router"], d.endpoints["decode"], d.endpoints["prefill"]
	gen := func(url string) float64 { return total(t, scrape(t, url), "sglang:generation_tokens_total") }
	realtime := func() float64 {
		mfs := scrape(t, decode)
		if _, ok := mfs["sglang:realtime_tokens_total"]; !ok {
			return 0
		}
		return total(t, mfs, "sglang:realtime_tokens_total")
	}
	genBefore, prefillGenBefore := gen(decode), gen(prefill)

	done := make(chan chatResult, 1)
	go func() { done <- chatRID(router, "", "", 400, 20*time.Second) }() // 2 s at 200 tokens/s
	require.Eventually(t, func() bool { return realtime() > 50 }, 5*time.Second, 20*time.Millisecond,
		"realtime_tokens_total counts every decode iteration")
	require.Equal(t, genBefore, gen(decode), "nothing finished yet: generation_tokens_total is flat while decode streams")
	r := <-done
	require.NoError(t, r.err)
	require.Equal(t, 200, r.status)
	require.Equal(t, genBefore+400, gen(decode), "the finished request adds its 400 completion tokens at once")
	require.GreaterOrEqual(t, realtime(), 400.0)
	require.Equal(t, prefillGenBefore+1, gen(prefill), "a PD prefill finishes with its first token")
	require.Positive(t, total(t, scrape(t, prefill), "sglang:prompt_tokens_total"))
}

// TestUpHelpListsProfilesAndKnobs: `up -h` names every profile and knob.
func TestUpHelpListsProfilesAndKnobs(t *testing.T) {
	out, err := exec.Command(simBinary, "up", "-h").CombinedOutput()
	require.NoError(t, err, string(out))
	for _, want := range []string{"-profile", "2025-mid, 2025-late, 2026-mid, 2026-late", "-transfer-backend", "-metrics",
		"-request-ids", "-abort-latency", "-log-tz", "-overlap", "-log-format", "-router-arg"} {
		require.Contains(t, string(out), want)
	}
}

// TestUpRejectsBadKnobs: a wrong value fails before anything starts.
func TestUpRejectsBadKnobs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"--profile", "2024-early"}, `unknown profile "2024-early"`},
		{[]string{"--transfer-backend", "tcp"}, "--transfer-backend must be nixl or mooncake"},
		{[]string{"--metrics", "maybe"}, "--metrics must be on or off"},
		{[]string{"--request-ids", "mine"}, "--request-ids must be engine or client"},
		{[]string{"--abort-latency", "4s-2s"}, "want 0 <= MIN <= MAX"},
		{[]string{"--log-tz", "Mars/Olympus_Mons"}, `unknown time zone "Mars/Olympus_Mons"`},
		{[]string{"--overlap", "sometimes"}, "--overlap must be on, flag, config or forced"},
		{[]string{"--overlap", "config", "--scenario", "fixed"}, "contradicts --scenario fixed"},
	} {
		dir := t.TempDir()
		out, err := runSim(t, append([]string{"up", "--dir", filepath.Join(dir, "d")}, tc.args...)...)
		require.Error(t, err)
		require.Contains(t, out, tc.err)
		_, statErr := os.Stat(filepath.Join(dir, "d"))
		require.True(t, os.IsNotExist(statErr), "nothing was written")
	}
}
