package sim_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
)

var (
	anyFailureRe = regexp.MustCompile(`failed for request`)
	// One line per request on rank 0 (every TP rank logs its own); the reason is the
	// backend's (NIXL builds record none for an abort).
	bootstrapAbortRe   = regexp.MustCompile(`\] Prefill bootstrap failed for request rank=0 .* with exception `)
	healthCheckFailRe  = regexp.MustCompile(`^\[[\d-]+ [\d:.]+\] Health check failed\. Server couldn't get a response from detokenizer for last 1 seconds\. tic start time: \d\d:\d\d:\d\d\. last_heartbeat time: \d\d:\d\d:\d\d$`)
	watchdogTimeoutRe  = regexp.MustCompile(`^\[[\d-]+ [\d:.]+ DP(\d) TP(\d)\] Scheduler watchdog timeout \(self\.watchdog_timeout=1\.0, self\.soft=False\)$`)
	receivedSigquitRe  = regexp.MustCompile(`^\[[\d-]+ [\d:.]+\] Received sigquit from a child process\. It usually means the child failed\.$`)
	decodeSchedGauges  = []string{"sglang:num_running_reqs", "sglang:num_decode_prealloc_queue_reqs", "sglang:num_decode_transfer_queue_reqs", "sglang:gen_throughput", "sglang:token_usage"}
	bootstrapGaugeName = []string{"sglang:num_prefill_prealloc_queue_reqs", "sglang:num_prefill_bootstrap_queue_reqs"}
)

// hangTruth is the part of decode's /_sim/state the decode-hang tests read.
type hangTruth struct {
	Hung               bool   `json:"hung"`
	CurBatch           bool   `json:"cur_batch"`
	HealthCheckTimeout string `json:"health_check_timeout"`
	WatchdogTimeout    string `json:"watchdog_timeout"`
	WatchdogFired      bool   `json:"watchdog_fired"`
	SlowITL            string `json:"slow_itl"`
	Hang               struct {
		Overlap        bool `json:"overlap_schedule"`
		BatchInFlight  bool `json:"batch_in_flight"`
		Inbox          int  `json:"inbox"`
		AbortsPending  int  `json:"aborts_pending"`
		FailuresPendig int  `json:"failures_pending"`
	} `json:"hang"`
}

func decodeState(tb testing.TB, d *deployment) hangTruth {
	tb.Helper()
	var st hangTruth
	getJSON(tb, d.endpoints["decode"]+"/_sim/state", &st)
	return st
}

func prefillBootstrap(tb testing.TB, d *deployment) int {
	tb.Helper()
	var st struct {
		Bootstrap int `json:"bootstrap"`
	}
	getJSON(tb, d.endpoints["prefill"]+"/_sim/state", &st)
	return st.Bootstrap
}

// bootstrapGauge reads prefill's bootstrap-queue gauge under whichever name the
// impersonated build uses.
func bootstrapGauge(tb testing.TB, mfs map[string]*dto.MetricFamily) float64 {
	tb.Helper()
	for _, name := range bootstrapGaugeName {
		if _, ok := mfs[name]; ok {
			return total(tb, mfs, name)
		}
	}
	tb.Fatalf("no prefill bootstrap-queue gauge among %v", bootstrapGaugeName)
	return 0
}

// getWithin GETs url with a client timeout and reports the status, or an error when
// the client gave up first.
func getWithin(url string, timeout time.Duration) (int, error) {
	c := &http.Client{Timeout: timeout}
	resp, err := c.Get(url)
	if err != nil {
		return 0, err
	}
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

func postFaultJSON(tb testing.TB, url, body string) string {
	tb.Helper()
	resp, err := http.Post(url+"/_sim/fault", "application/json", strings.NewReader(body))
	require.NoError(tb, err)
	defer func() { _ = resp.Body.Close() }() // test cleanup
	var out strings.Builder
	_, _ = bufio.NewReader(resp.Body).WriteTo(&out)
	require.Equal(tb, http.StatusOK, resp.StatusCode, out.String())
	return out.String()
}

// TestDecodeHang injects the blocked-event-loop hang into an idle decode, with the
// overlap schedule on (through ctl) and off (through the admin API), and checks what
// SGLang shows when its decode scheduler loop blocks: no batch and no abort lines,
// prefill holding new requests in its bootstrap queue, /health and /server_info not
// answering, /metrics answering with frozen gauges; clear does not help, a restart
// does.
func TestDecodeHang(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		args    []string
		inject  func(t *testing.T, d *deployment) string
		overlap bool
	}{
		{"ctl, overlap schedule on", nil, func(t *testing.T, d *deployment) string {
			t.Helper()
			return d.ctl(t, "fault", "decode-hang")
		}, true},
		{"admin API, overlap schedule off", []string{"--engine-arg=--disable-overlap-schedule"}, func(t *testing.T, d *deployment) string {
			t.Helper()
			return postFaultJSON(t, d.endpoints["decode"], `{"fault":"decode-hang"}`)
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := up(t, tc.args...)
			router, prefill, decode := d.endpoints["router"], d.endpoints["prefill"], d.endpoints["decode"]
			require.Equal(t, 200, chat(router, "before-hang", 5*time.Second, false).status)
			require.Eventually(t, func() bool {
				return len(grep(logLines(t, d.logPath("decode"), 0), decodeBatchRe)) > 0
			}, 5*time.Second, 20*time.Millisecond)
			require.Eventually(t, func() bool { return !decodeState(t, d).CurBatch }, 5*time.Second, 10*time.Millisecond)

			out := tc.inject(t, d)
			require.Contains(t, out, `"hung":true`)
			st := decodeState(t, d)
			require.True(t, st.Hung)
			require.Equal(t, tc.overlap, st.Hang.Overlap, "the ground truth records the overlap schedule")
			require.False(t, st.Hang.BatchInFlight, "the decode was idle")
			decodeMark, prefillMark := countLines(t, d.logPath("decode")), countLines(t, d.logPath("prefill"))
			frozen := scrape(t, decode)

			// Client traffic: three requests at once, each given up after 3 s.
			const n = 3
			results := make([]chatResult, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					results[i] = chat(router, fmt.Sprintf("hang-%d", i), 3*time.Second, true)
				}()
			}
			// Decode never reads them, so it never hand-shakes: prefill keeps all
			// three in its bootstrap queue, and its gauge says so.
			require.Eventually(t, func() bool {
				return prefillBootstrap(t, d) == n && bootstrapGauge(t, scrape(t, prefill)) == n && decodeState(t, d).Hang.Inbox == n
			}, 2500*time.Millisecond, 20*time.Millisecond, "prefill's bootstrap queue holds the new requests")
			wg.Wait()
			for _, r := range results {
				require.True(t, r.timedOut, "%+v", r)
				require.Zero(t, r.bytes, "a hung decode returns no bytes")
			}
			// Prefill processes the aborts of its bootstrap queue; decode's aborts wait
			// in the blocked loop's input.
			require.Eventually(t, func() bool {
				return len(grep(logLines(t, d.logPath("prefill"), prefillMark), bootstrapAbortRe)) == n && prefillBootstrap(t, d) == 0
			}, 10*time.Second, 20*time.Millisecond)
			require.Eventually(t, func() bool { return decodeState(t, d).Hang.AbortsPending == n }, 5*time.Second, 10*time.Millisecond)
			time.Sleep(300 * time.Millisecond) // an abort line, had there been one, would be out by now
			dlines := logLines(t, d.logPath("decode"), decodeMark)
			require.Empty(t, grep(dlines, decodeBatchRe), "a blocked loop runs no batch")
			require.Empty(t, grep(dlines, anyFailureRe), "a blocked loop processes no abort")
			require.Empty(t, grep(logLines(t, d.logPath("prefill"), prefillMark), prefillBatchRe),
				"the new requests never reach a prefill batch")

			// /health is a generation served by the loop: it does not answer within
			// the default SGLANG_HEALTH_CHECK_TIMEOUT (20 s, then 503; see
			// TestDecodeHangHealthCheckTimeout).
			require.Equal(t, "20s", decodeState(t, d).HealthCheckTimeout)
			_, err := getWithin(decode+"/health", 1500*time.Millisecond)
			require.Error(t, err, "decode /health does not answer while the loop is blocked")
			require.Equal(t, 200, httpStatus(t, prefill+"/health"), "prefill is healthy")
			// /server_info round-trips to the scheduler: it hangs until the client gives
			// up. Endpoints the HTTP process answers alone still work.
			_, err = getWithin(decode+"/server_info", time.Second)
			require.Error(t, err, "/server_info hangs")
			require.Equal(t, 200, httpStatus(t, decode+"/model_info"))
			// /metrics answers, its scheduler gauges frozen at their last values.
			time.Sleep(300 * time.Millisecond) // three idle-refresh periods
			now := scrape(t, decode)
			for _, g := range decodeSchedGauges {
				require.Equal(t, total(t, frozen, g), total(t, now, g), "%s is frozen", g)
			}

			// Clearing injected faults does not unblock a loop.
			d.ctl(t, "fault", "clear")
			require.True(t, decodeState(t, d).Hung)
			require.True(t, chat(router, "after-clear", time.Second, false).timedOut)
			require.Equal(t, "active", d.show(t, "decode")["ActiveState"], "no batch was in flight: the watchdog has nothing to watch")

			// Restarting decode does.
			d.ctl(t, "restart", "decode")
			require.False(t, decodeState(t, d).Hung)
			r := chat(router, "after-restart", 5*time.Second, true)
			require.NoError(t, r.err)
			require.Equal(t, 200, r.status)
			require.Contains(t, r.body, "data: [DONE]")
			require.Equal(t, 200, httpStatus(t, decode+"/health"))
		})
	}
}

// TestDecodeHangHealthCheckTimeout is about SGLANG_HEALTH_CHECK_TIMEOUT (1 s here):
// a blocked decode answers /health and /health_generate 503 after it and logs
// SGLang's "Health check failed" line, whether the hang was injected at run time or
// by the start flag, which leaves decode unable to pass its start-up health check.
func TestDecodeHangHealthCheckTimeout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		inject func(t *testing.T, d *deployment)
	}{
		{"ctl", func(t *testing.T, d *deployment) {
			t.Helper()
			require.Equal(t, 200, httpStatus(t, d.endpoints["decode"]+"/health"))
			d.ctl(t, "fault", "decode-hang")
		}},
		{"start flag", func(t *testing.T, d *deployment) {
			t.Helper()
			path := d.dir + "/serve_decode.sh"
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Contains(t, string(b), "--log-level info")
			require.NoError(t, os.WriteFile(path, []byte(strings.Replace(string(b), "--log-level info", "--log-level info --sim-fault decode-hang", 1)), 0o755))
			out, err := runSim(t, "ctl", "--dir", d.dir, "--timeout", "3s", "restart", "decode")
			require.Error(t, err, "a decode that comes up hung never passes /health")
			require.Contains(t, out, "did not answer")
			require.NoError(t, os.WriteFile(path, b, 0o755))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := up(t, "--health-timeout", "1s")
			decode := d.endpoints["decode"]
			tc.inject(t, d)
			require.True(t, decodeState(t, d).Hung)
			require.Equal(t, "1s", decodeState(t, d).HealthCheckTimeout)
			mark := countLines(t, d.logPath("decode"))
			for _, path := range []string{"/health", "/health_generate"} {
				start := time.Now()
				code, err := getWithin(decode+path, 5*time.Second)
				require.NoError(t, err)
				require.Equal(t, http.StatusServiceUnavailable, code, path)
				require.GreaterOrEqual(t, time.Since(start), time.Second, "503 only after SGLANG_HEALTH_CHECK_TIMEOUT")
			}
			require.Len(t, grep(logLines(t, d.logPath("decode"), mark), healthCheckFailRe), 2)
			require.Contains(t, d.ctl(t, "status"), "503")
			require.Equal(t, 200, httpStatus(t, d.endpoints["prefill"]+"/health"))

			d.ctl(t, "restart", "decode")
			require.Equal(t, 200, httpStatus(t, decode+"/health"))
		})
	}
}

// streamTokens sends one streamed chat completion and returns when each content
// token arrived, counted from the request's start.
func streamTokens(tb testing.TB, baseURL string, maxTokens int, timeout time.Duration) []time.Duration {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	body := fmt.Sprintf(`{"model":"deepseek-v4","messages":[{"role":"user","content":"itl"}],"max_tokens":%d,"stream":true}`, maxTokens)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, baseURL+"/v1/chat/completions", strings.NewReader(body))
	require.NoError(tb, err)
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(tb, err)
	defer func() { _ = resp.Body.Close() }() // test cleanup
	require.Equal(tb, http.StatusOK, resp.StatusCode)
	var at []time.Duration
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || line == "[DONE]" {
			continue
		}
		var chunk struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		require.NoError(tb, json.Unmarshal([]byte(line), &chunk))
		if len(chunk.Choices) > 0 && chunk.Choices[0].Delta.Content != "" {
			at = append(at, time.Since(start))
		}
	}
	require.NoError(tb, sc.Err())
	return at
}

// TestSlowDecode: every decode iteration takes the configured inter-token latency,
// the first token still comes at the normal pace, batches keep being logged with the
// lower throughput, and clear restores the pace.
func TestSlowDecode(t *testing.T) {
	t.Parallel()
	d := up(t)
	router := d.endpoints["router"]
	base := streamTokens(t, router, 6, 10*time.Second)
	require.Len(t, base, 6)

	const itl = 300 * time.Millisecond
	out := d.ctl(t, "fault", "slow-decode", "--itl", itl.String())
	require.Contains(t, out, `"slow_itl":"300ms"`)
	mark := countLines(t, d.logPath("decode"))
	slow := streamTokens(t, router, 6, 10*time.Second)
	require.Len(t, slow, 6)
	require.Less(t, slow[0], base[0]+itl/2, "time to first token stays normal (%v vs %v)", slow[0], base[0])
	for i := 1; i < len(slow); i++ {
		gap := slow[i] - slow[i-1]
		require.InDelta(t, itl.Seconds(), gap.Seconds(), 0.1, "inter-token gap %d is the ITL: %v", i, gap)
	}
	var lines []string
	require.Eventually(t, func() bool {
		lines = grep(logLines(t, d.logPath("decode"), mark), decodeBatchRe)
		return len(lines) > 0
	}, 5*time.Second, 20*time.Millisecond, "batches continue")
	for _, l := range lines {
		m := regexp.MustCompile(`gen throughput \(token/s\): ([\d.]+)`).FindStringSubmatch(l)
		require.NotNil(t, m, l)
		var tput float64
		_, err := fmt.Sscan(m[1], &tput)
		require.NoError(t, err)
		// 3.3 token/s at one token per 300 ms (the window may include a few faster
		// tokens from before, so a tenth of the healthy pace is the bound); a healthy
		// decode here makes 200.
		require.Less(t, tput, 20.0, "gen throughput reflects the ITL: %s", l)
	}

	d.ctl(t, "fault", "clear")
	fast := streamTokens(t, router, 6, 10*time.Second)
	require.Len(t, fast, 6)
	require.Less(t, fast[5]-fast[0], itl, "clear restores the pace")
}

// TestDecodeHangWatchdog is about --watchdog-timeout (1 s here): a loop that blocks
// with a batch in flight trips SGLang's watchdog, which logs on every scheduler rank
// and has the process tree SIGKILLed 5 s later (the unit fails like a crash); a loop
// that blocks idle has no batch for the watchdog to watch and stays up.
func TestDecodeHangWatchdog(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		inFlight bool
	}{
		{"batch in flight", true},
		{"idle", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := up(t, "--engine-arg=--watchdog-timeout=1")
			router := d.endpoints["router"]
			streamRest := make(chan string, 1)
			if tc.inFlight {
				// A long streamed generation: the hang hits it mid-batch.
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				body := `{"model":"deepseek-v4","messages":[{"role":"user","content":"long"}],"max_tokens":5000,"stream":true}`
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, router+"/v1/chat/completions", strings.NewReader(body))
				require.NoError(t, err)
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				require.NoError(t, err)
				defer func() { _ = resp.Body.Close() }() // test cleanup
				rd := bufio.NewReader(resp.Body)
				_, err = rd.ReadString('\n')
				require.NoError(t, err, "the first token arrived")
				go func() {
					var rest strings.Builder
					_, _ = rd.WriteTo(&rest)
					streamRest <- rest.String()
				}()
				require.True(t, decodeState(t, d).CurBatch)
			}
			mark := countLines(t, d.logPath("decode"))
			hungAt := time.Now()
			d.ctl(t, "fault", "decode-hang")
			require.Equal(t, tc.inFlight, decodeState(t, d).Hang.BatchInFlight)

			if !tc.inFlight {
				time.Sleep(3500 * time.Millisecond) // the watchdog would have logged after 1-1.5 s
				require.Empty(t, grep(logLines(t, d.logPath("decode"), mark), regexp.MustCompile(`watchdog timeout`)))
				st := decodeState(t, d)
				require.True(t, st.Hung)
				require.False(t, st.WatchdogFired)
				require.Equal(t, "1.0", st.WatchdogTimeout)
				require.Equal(t, "active", d.show(t, "decode")["ActiveState"])
				return
			}
			require.Eventually(t, func() bool {
				return len(grep(logLines(t, d.logPath("decode"), mark), watchdogTimeoutRe)) == 4
			}, 5*time.Second, 20*time.Millisecond, "every scheduler rank's watchdog fires")
			require.GreaterOrEqual(t, time.Since(hungAt), time.Second, "not before the timeout")
			require.True(t, decodeState(t, d).WatchdogFired)
			require.Eventually(t, func() bool {
				return d.show(t, "decode")["ActiveState"] == "failed"
			}, 10*time.Second, 50*time.Millisecond)
			require.GreaterOrEqual(t, time.Since(hungAt), 6*time.Second, "the scheduler waits 5 s before signalling its parent")
			st := d.show(t, "decode")
			require.Equal(t, "signal", st["Result"], "kill_process_tree SIGKILLs the launcher itself")
			require.Equal(t, "9", st["ExecMainStatus"])
			lines := logLines(t, d.logPath("decode"), mark)
			ranks := map[string]bool{}
			for _, l := range grep(lines, watchdogTimeoutRe) {
				m := watchdogTimeoutRe.FindStringSubmatch(l)
				require.Equal(t, m[1], m[2], "DP rank i is global TP rank i (tp 4, dp 4, DP attention)")
				ranks[m[1]] = true
			}
			require.Len(t, ranks, 4)
			require.Len(t, grep(lines, receivedSigquitRe), 1)
			require.True(t, receivedSigquitRe.MatchString(lastNonEmpty(lines)), "the parent's line is the last")
			select {
			case rest := <-streamRest:
				require.NotContains(t, rest, "[DONE]", "the stream is cut when the process dies")
			case <-time.After(5 * time.Second):
				t.Fatal("the stream outlived the decode process")
			}

			d.ctl(t, "restart", "decode")
			r := chat(router, "after-restart", 5*time.Second, false)
			require.NoError(t, r.err)
			require.Equal(t, 200, r.status)
		})
	}
}

func lastNonEmpty(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.TrimSpace(lines[i]) != "" {
			return lines[i]
		}
	}
	return ""
}
