package sim_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
)

const fixtureDir = "../testdata/sglang"

// TestFixtureShapes pins the shapes to the fixtures: every fixture line is exactly
// one known kind.
func TestFixtureShapes(t *testing.T) {
	for _, name := range []string{"decode-healthy.log", "decode-wedged.log", "prefill-wedged.log"} {
		t.Run(name, func(t *testing.T) {
			for _, l := range nonEmpty(logLines(t, filepath.Join(fixtureDir, name), 0)) {
				require.Len(t, classify(stripJournal(l), fixtureShapes), 1, "fixture line: %s", l)
			}
		})
	}
}

// TestLogLinesMatchFixtures runs healthy traffic, a wedge and a probe timeout, then
// holds every line the engines wrote to the fixtures' shapes, and checks that every
// kind of fixture line is produced.
func TestLogLinesMatchFixtures(t *testing.T) {
	t.Parallel()
	d := up(t, "--transfer-backend", "nixl") // the fixtures' backend
	for range 3 {
		require.Equal(t, 200, chat(d.endpoints["router"], "", 5*time.Second, false).status)
	}
	require.Eventually(t, func() bool {
		return len(grep(logLines(t, d.logPath("decode"), 0), decodeBatchRe)) > 0
	}, 5*time.Second, 20*time.Millisecond)
	require.Contains(t, d.ctl(t, "fault", "pd-wedge", "--synthetic"), `"wedged":true`)
	for _, rid := range []string{"shape-1", "shape-2"} {
		require.True(t, chat(d.endpoints["router"], rid, 500*time.Millisecond, false).timedOut)
	}
	require.Equal(t, 200, httpStatus(t, d.endpoints["decode"]+"/health"))
	scrape(t, d.endpoints["decode"])

	seen := map[string]bool{}
	all := slices.Concat(fixtureShapes, extraShapes)
	require.Eventually(t, func() bool {
		return len(grep(logLines(t, d.logPath("prefill"), 0), prefillTransferFailedRe)) > 0
	}, 5*time.Second, 20*time.Millisecond)
	for _, role := range []string{"prefill", "decode"} {
		for _, l := range logLines(t, d.logPath(role), 0) {
			kinds := classify(l, all)
			require.Len(t, kinds, 1, "%s line has no fixture shape: %s", role, l)
			seen[kinds[0]] = true
		}
	}
	for _, s := range fixtureShapes {
		require.True(t, seen[s.name], "the simulator never printed a %q line", s.name)
	}
	require.True(t, seen["server args"])
}

// TestMetricsMatchFixtures parses the fixtures and the simulator's /metrics with
// Prometheus' text parser and requires every fixture family, with its type and its
// label names, in the simulator's exposition.
func TestMetricsMatchFixtures(t *testing.T) {
	t.Parallel()
	d := up(t)
	require.Equal(t, 200, chat(d.endpoints["router"], "", 5*time.Second, false).status)
	for _, role := range []string{"prefill", "decode"} {
		f, err := os.Open(filepath.Join(fixtureDir, "metrics-"+role+"-wedged.prom"))
		require.NoError(t, err)
		want := parseMetrics(t, f)
		_ = f.Close()
		got := scrape(t, d.endpoints[role])
		for name, wf := range want {
			gf, ok := got[name]
			require.Truef(t, ok, "%s: family %s missing", role, name)
			require.Equal(t, wf.GetType(), gf.GetType(), "%s: type of %s", role, name)
			require.Len(t, gf.GetMetric(), len(wf.GetMetric()), "%s: series of %s", role, name)
			require.Equal(t, labelNames(wf.GetMetric()[0]), labelNames(gf.GetMetric()[0]), "%s: labels of %s", role, name)
		}
		for _, name := range []string{"sglang:num_running_reqs", "sglang:num_queue_reqs", "sglang:gen_throughput",
			"sglang:num_prefill_inflight_queue_reqs", "sglang:num_prefill_prealloc_queue_reqs",
			"sglang:num_decode_transfer_queue_reqs", "sglang:num_decode_prealloc_queue_reqs",
			"sglang:num_transfer_failed_reqs_total", "sglang:generation_tokens_total", "sglang:prompt_tokens_total"} {
			require.Contains(t, got, name)
		}
		require.Equal(t, "deepseek-v4", labelValue(got["sglang:num_running_reqs"].GetMetric()[0], "model_name"))
		require.Equal(t, role, labelValue(got["sglang:num_running_reqs"].GetMetric()[0], "engine_type"))
	}
}

func labelNames(m *dto.Metric) []string {
	var names []string
	for _, lp := range m.GetLabel() {
		names = append(names, lp.GetName())
	}
	slices.Sort(names)
	return names
}

func labelValue(m *dto.Metric, name string) string {
	for _, lp := range m.GetLabel() {
		if lp.GetName() == name {
			return lp.GetValue()
		}
	}
	return ""
}
