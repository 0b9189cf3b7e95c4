package checks

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/argspec"
	"github.com/runbot/runbot/internal/step"
	"github.com/runbot/runbot/internal/target"
	"github.com/runbot/runbot/remote"
)

// promServer serves a fixture exposition. edit, when set, rewrites it for
// the n-th request (0-based), so that values can change between scrapes;
// it returns "" to fail that request with a 503.
func promServer(t *testing.T, fixture string, edit func(n int, body string) string) *httptest.Server {
	t.Helper()
	b, err := os.ReadFile("../testdata/sglang/" + fixture)
	require.NoError(t, err)
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := string(b)
		if edit != nil {
			body = edit(int(n.Add(1)-1), body)
		}
		if body == "" {
			http.Error(w, "starting", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// setSeries replaces the value of the series whose line starts with prefix.
func setSeries(body, prefix string, v float64) string {
	re := regexp.MustCompile(`(?m)^(` + regexp.QuoteMeta(prefix) + `[^}]*\}) \S+$`)
	return re.ReplaceAllString(body, fmt.Sprintf("${1} %v", v))
}

func metricsEnv(url string, args argspec.Values) Env {
	return Env{
		Target: target.Target{Role: "decode", Host: "gpu-node-01", Runner: &remote.Local{Name: "gpu-node-01"}, MetricsURL: url + "/metrics"},
		Args:   args,
		Now:    time.Now,
	}
}

var decodeMetrics = []string{
	"sglang:num_running_reqs",
	"sglang:num_decode_transfer_queue_reqs",
	"sglang:num_decode_prealloc_queue_reqs",
	"sglang:gen_throughput",
	"sglang:num_transfer_failed_reqs_total",
	"sglang:num_prefill_bootstrap_queue_reqs|sglang:num_prefill_prealloc_queue_reqs",
	"sglang:not_in_this_build",
}

func runMetrics(t *testing.T, env Env) (MetricsSampleOutput, step.Result) {
	t.Helper()
	res, err := MetricsSample{}.Run(t.Context(), env)
	require.NoError(t, err)
	o, ok := res.Values.(MetricsSampleOutput)
	require.True(t, ok, "Values is %T", res.Values)
	for _, line := range res.Evidence {
		t.Log(line)
	}
	return o, res
}

// The wedged decode of the incident: every gauge reads 0 in every sample,
// one rank's transfer counter rises with each abort, and a throughput
// gauge holds a fractional value that never moves.
func TestMetricsSampleWedgedDecode(t *testing.T) {
	srv := promServer(t, "metrics-decode-wedged.prom", func(n int, body string) string {
		body = setSeries(body, `sglang:num_transfer_failed_reqs_total{dp_rank="0"`, float64(7+n))
		return setSeries(body, `sglang:gen_throughput{dp_rank="1"`, 266.13)
	})
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		o, res := runMetrics(t, metricsEnv(srv.URL, argspec.Values{"metrics": decodeMetrics}))
		require.Equal(t, 8*time.Second, time.Since(start), "5 samples 2s apart")

		require.True(t, o.Reachable)
		require.Equal(t, 5, o.Samples)
		require.Equal(t, 5, o.SamplesOK)
		require.Equal(t, 8*time.Second, o.Span)

		running := o.Metrics["sglang:num_running_reqs"]
		require.Equal(t, VerdictConstant, running.Verdict)
		require.Equal(t, 4, running.Series)
		require.Equal(t, 5, running.Samples)
		require.Zero(t, running.Max)
		require.Equal(t, "gauge", running.Type)

		tp := o.Metrics["sglang:gen_throughput"]
		require.Equal(t, VerdictStaleLooking, tp.Verdict)
		require.InDelta(t, 266.13, tp.Last, 1e-9)

		failed := o.Metrics["sglang:num_transfer_failed_reqs_total"]
		require.Equal(t, VerdictChanging, failed.Verdict)
		require.Equal(t, "counter", failed.Type)
		require.InDelta(t, 4, failed.Increase, 1e-9)
		require.InDelta(t, 0.5, failed.Rate, 1e-9)
		require.Equal(t, []float64{26, 27, 28, 29, 30}, failed.Values)
		require.True(t, failed.PerSeries[`dp_rank="0",engine_type="decode",model_name="deepseek-v4",moe_ep_rank="0",pp_rank="0",tp_rank="0"`].Changed)
		require.False(t, failed.PerSeries[`dp_rank="1",engine_type="decode",model_name="deepseek-v4",moe_ep_rank="0",pp_rank="0",tp_rank="1"`].Changed)

		// An alias group is reachable under each of its names.
		boot := o.Metrics["sglang:num_prefill_bootstrap_queue_reqs"]
		require.Equal(t, "sglang:num_prefill_prealloc_queue_reqs", boot.Name)
		require.Equal(t, boot, o.Metrics["sglang:num_prefill_prealloc_queue_reqs"])

		require.Equal(t, VerdictMissing, o.Metrics["sglang:not_in_this_build"].Verdict)

		ev := strings.Join(res.Evidence, "\n")
		require.Contains(t, ev, "sglang:num_running_reqs = 0 (sum of 4 series) in every sample (constant), 5 samples over 8s")
		require.Contains(t, ev, "sglang:num_transfer_failed_reqs_total: +4 over 8s (0.5/s), now 30")
		require.Contains(t, ev, "sglang:gen_throughput = 266.13 (sum of 4 series) in every sample, identical to the last digit: looks stale")
		require.Contains(t, ev, "sglang:not_in_this_build: not exported in any of 5 samples")

		var samples int
		for _, e := range res.Events {
			require.Equal(t, EventSample, e.Kind)
			require.NotEmpty(t, e.Labels["series"])
			if e.Labels["metric"] == "sglang:num_running_reqs" {
				samples++
			}
		}
		require.Equal(t, 20, samples, "4 series × 5 samples")
	})
}

// The incident's red herring: one early reading showed two running
// requests; repeated sampling shows that value going away.
func TestMetricsSampleZombieReadingIsNotAReading(t *testing.T) {
	srv := promServer(t, "metrics-decode-wedged.prom", func(n int, body string) string {
		if n == 0 {
			return setSeries(body, `sglang:num_running_reqs{dp_rank="2"`, 2)
		}
		return body
	})
	synctest.Test(t, func(t *testing.T) {
		one, res := runMetrics(t, metricsEnv(srv.URL, argspec.Values{"metrics": []string{"sglang:num_running_reqs"}, "samples": 1}))
		m := one.Metrics["sglang:num_running_reqs"]
		require.Equal(t, VerdictSingleSample, m.Verdict)
		require.Equal(t, 2.0, m.Max)
		require.Contains(t, res.Evidence[0], "in 1 sample only, not a reading")
	})
}

func TestMetricsSampleChangingGauge(t *testing.T) {
	srv := promServer(t, "metrics-decode-wedged.prom", func(n int, body string) string {
		if n == 0 {
			return setSeries(body, `sglang:num_running_reqs{dp_rank="2"`, 2)
		}
		return body
	})
	synctest.Test(t, func(t *testing.T) {
		o, res := runMetrics(t, metricsEnv(srv.URL, argspec.Values{"metrics": []string{"sglang:num_running_reqs"}}))
		m := o.Metrics["sglang:num_running_reqs"]
		require.Equal(t, VerdictChanging, m.Verdict)
		require.Equal(t, []float64{2, 0, 0, 0, 0}, m.Values)
		require.Zero(t, m.Last)
		require.Equal(t, 2.0, m.Max)
		require.Contains(t, res.Evidence[0], "sglang:num_running_reqs: 2 → 0 → 0 → 0 → 0 (sum of 4 series) (changing; max 2)")
	})
}

func TestMetricsSamplePrefillInflightParked(t *testing.T) {
	srv := promServer(t, "metrics-prefill-wedged.prom", nil)
	synctest.Test(t, func(t *testing.T) {
		o, _ := runMetrics(t, metricsEnv(srv.URL, argspec.Values{"metrics": []string{
			"sglang:num_prefill_inflight_queue_reqs", "sglang:kv_transfer_speed_gb_s",
			"sglang:time_to_first_token_seconds_count", "sglang:prompt_tokens_total",
		}, "samples": 3}))
		inflight := o.Metrics["sglang:num_prefill_inflight_queue_reqs"]
		require.Equal(t, VerdictConstant, inflight.Verdict)
		require.Equal(t, 1.0, inflight.Min)
		require.Equal(t, VerdictStaleLooking, o.Metrics["sglang:kv_transfer_speed_gb_s"].Verdict)
		ttft := o.Metrics["sglang:time_to_first_token_seconds_count"]
		require.Equal(t, "counter", ttft.Type, "a histogram's _count is sampled as a counter")
		require.Equal(t, VerdictConstant, ttft.Verdict)
		require.Positive(t, ttft.Last)
		require.Zero(t, ttft.Rate)
	})
}

func TestMetricsSampleCounterReset(t *testing.T) {
	srv := promServer(t, "metrics-prefill-wedged.prom", func(n int, body string) string {
		return setSeries(body, `sglang:num_transfer_failed_reqs_total{`, []float64{26, 27, 1, 2}[n])
	})
	synctest.Test(t, func(t *testing.T) {
		o, _ := runMetrics(t, metricsEnv(srv.URL, argspec.Values{"metrics": []string{"sglang:num_transfer_failed_reqs_total"}, "samples": 4, "interval": time.Second}))
		m := o.Metrics["sglang:num_transfer_failed_reqs_total"]
		require.InDelta(t, 3, m.Increase, 1e-9, "1 before the restart, 1 counted from zero, 1 after")
		require.InDelta(t, 1, m.Rate, 1e-9)
	})
}

func TestMetricsSampleUnreachable(t *testing.T) {
	srv := promServer(t, "metrics-decode-wedged.prom", func(int, string) string { return "" })
	synctest.Test(t, func(t *testing.T) {
		o, res := runMetrics(t, metricsEnv(srv.URL, argspec.Values{"metrics": []string{"sglang:num_running_reqs"}, "samples": 3}))
		require.False(t, o.Reachable)
		require.Equal(t, 3, o.Errors)
		require.Contains(t, o.LastError, "HTTP 503")
		require.Equal(t, VerdictMissing, o.Metrics["sglang:num_running_reqs"].Verdict)
		require.Equal(t, []string{"3 of 3 scrapes of " + srv.URL + "/metrics failed; last: HTTP 503: starting"}, res.Evidence)
		require.Len(t, res.Events, 3)
		require.Equal(t, EventScrapeError, res.Events[0].Kind)
	})
}

func TestMetricsSampleSomeScrapesFail(t *testing.T) {
	srv := promServer(t, "metrics-decode-wedged.prom", func(n int, body string) string {
		if n < 4 {
			return ""
		}
		return body
	})
	synctest.Test(t, func(t *testing.T) {
		o, res := runMetrics(t, metricsEnv(srv.URL, argspec.Values{"metrics": []string{"sglang:num_running_reqs"}}))
		require.True(t, o.Reachable)
		require.Equal(t, 1, o.SamplesOK)
		require.Equal(t, VerdictSingleSample, o.Metrics["sglang:num_running_reqs"].Verdict)
		require.Contains(t, strings.Join(res.Evidence, "\n"), "1 sample only")
	})
}

func TestMetricsSampleStopsWhenCancelled(t *testing.T) {
	srv := promServer(t, "metrics-decode-wedged.prom", nil)
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		defer cancel()
		_, err := MetricsSample{}.Run(ctx, metricsEnv(srv.URL, argspec.Values{"metrics": []string{"sglang:num_running_reqs"}}))
		require.ErrorContains(t, err, "stopped after 2 of 5 scrapes")
	})
}

func TestMetricsSamplePlan(t *testing.T) {
	env := metricsEnv("http://127.0.0.1:30200", argspec.Values{"metrics": []string{"a", "b|c"}})
	require.Equal(t, []string{"GET http://127.0.0.1:30200/metrics 5 times, 2s apart, and compare a, b|c"}, MetricsSample{}.Plan(env))
}

func TestFormatNumber(t *testing.T) {
	for in, want := range map[float64]string{0: "0", 26: "26", 3.1991876e+07: "31991876", 266.13: "266.13", 0.026031494140625: "0.026", 0.0001234: "0.000123", -1.5: "-1.5"} {
		require.Equal(t, want, formatNumber(in), "%v", in)
	}
}

// A gauge the engine rewrites only at batches or an idle refresh up to
// gauge_refresh apart is, when constant over a shorter span, a last-known
// value: its evidence says so, and a constant counter or a changing gauge
// is not marked.
func TestMetricsSampleGaugeRefreshMarksLastKnown(t *testing.T) {
	srv := promServer(t, "metrics-decode-wedged.prom", func(n int, body string) string {
		return setSeries(body, `sglang:num_transfer_failed_reqs_total{dp_rank="0"`, float64(7+n))
	})
	cases := []struct {
		refresh   time.Duration
		lastKnown bool
	}{
		{refresh: 0, lastKnown: false},
		{refresh: 30 * time.Second, lastKnown: true},
		{refresh: 5 * time.Second, lastKnown: false}, // 8 s of samples outlast it
	}
	for _, c := range cases {
		t.Run(c.refresh.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				o, res := runMetrics(t, metricsEnv(srv.URL, argspec.Values{"metrics": decodeMetrics, "gauge_refresh": c.refresh}))
				require.Equal(t, c.lastKnown, o.Metrics["sglang:num_running_reqs"].LastKnown)
				require.False(t, o.Metrics["sglang:num_transfer_failed_reqs_total"].LastKnown, "a counter is live")
				joined := strings.Join(res.Evidence, "\n")
				if c.lastKnown {
					require.Contains(t, joined, "sglang:num_running_reqs = 0 (sum of 4 series) in every sample (last known, not live)")
					require.Contains(t, joined, "less than the 30s within which the engine rewrites them")
				} else {
					require.NotContains(t, joined, "last known")
				}
			})
		})
	}
}

// realtime_tokens_total counts prefill and decode tokens in one family; a
// label matcher keeps the decode series, the live evidence that decode
// generates.
func TestMetricsSampleLabelSelector(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := float64(n.Add(1))
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = fmt.Fprintf(w, "# TYPE sglang:realtime_tokens_total counter\n"+
			"sglang:realtime_tokens_total{engine_type=\"decode\",mode=\"decode\",tp_rank=\"0\"} %v\n"+
			"sglang:realtime_tokens_total{engine_type=\"decode\",mode=\"prefill,chunked\",tp_rank=\"0\"} 7\n", 100*i)
	}))
	t.Cleanup(srv.Close)
	synctest.Test(t, func(t *testing.T) {
		o, _ := runMetrics(t, metricsEnv(srv.URL, argspec.Values{"metrics": []string{
			`sglang:realtime_tokens_total{mode="decode"}`, `sglang:realtime_tokens_total{mode="prefill,chunked"}`,
			`sglang:realtime_tokens_total{mode="none"}`,
		}, "samples": 3}))
		dec := o.Metrics[`sglang:realtime_tokens_total{mode="decode"}`]
		require.Equal(t, 3, dec.Samples)
		require.InDelta(t, 200, dec.Increase, 1e-9)
		require.Equal(t, 1, dec.Series)
		require.InDelta(t, 7, o.Metrics[`sglang:realtime_tokens_total{mode="prefill,chunked"}`].Last, 1e-9, "a comma inside a quoted value")
		require.Equal(t, VerdictMissing, o.Metrics[`sglang:realtime_tokens_total{mode="none"}`].Verdict)
	})
}
