package sim

import (
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestPromFloat(t *testing.T) {
	for _, tc := range []struct {
		in   float64
		want string
	}{
		{0, "0.0"}, {1, "1.0"}, {26, "26.0"}, {0.25, "0.25"}, {9831, "9831.0"}, {196410.82, "196410.82"},
		{3.1991876e+07, "3.1991876e+07"}, {6.419583e+06, "6.419583e+06"}, {1e-05, "1e-05"}, {0.026031494140625, "0.026031494140625"},
	} {
		require.Equal(t, tc.want, promFloat(tc.in), "promFloat(%v)", tc.in)
	}
}

func TestPyStr(t *testing.T) {
	require.Equal(t, `'abc'`, pyStr("abc"))
	require.Equal(t, `"it's"`, pyStr("it's"))
	require.Equal(t, `'a\'b"c'`, pyStr(`a'b"c`))
}

// TestBatchLineEras checks each era's wording against the shapes the reference
// documents (§1.2, §1.3).
func TestBatchLineEras(t *testing.T) {
	p := PrefillStats{Iter: 7, NewSeq: 1, NewToken: 256, TokenUsage: 0.02, Bootstrap: 0, Inflight: 1, InputThroughput: 4.2}
	dstats := DecodeStats{Iter: 40, Running: 7, Tokens: 7040, TokenUsage: 0.01, GenThroughput: 266.5, Transfer: 1}
	for _, tc := range []struct {
		era     LogEra
		iters   bool
		prefill string
		decode  string
	}{
		{EraMid2025, false,
			`^Prefill batch\. #new-seq: 1, #new-token: 256, #cached-token: 0, token usage: 0\.02, .*#transferring-req: 1, $`,
			`^Decode batch\. #running-req: 7, #token: 7040, token usage: 0\.01, gen throughput \(token/s\): 266\.50, #queue-req: 0, $`},
		{EraLate2025, false,
			`^Prefill batch, .*#prealloc-req: 0, #inflight-req: 1, input throughput \(token/s\): 4\.20, $`,
			`^Decode batch, #running-req: 7, .*pre-allocated usage: 0\.00, #prealloc-req: 0, #transfer-req: 1, #retracted-req: 0, cuda graph: True, gen throughput \(token/s\): 266\.50, #queue-req: 0, $`},
		{EraMid2026, false,
			`^Prefill batch, .*#pending-token: 0, #prealloc-req: 0, #inflight-req: 1, cuda graph: False, input throughput \(token/s\): 4\.20$`,
			`^Decode batch, #running-req: 7, .*#queue-req: 0$`},
		{EraMid2026, true, `^Prefill batch \[7\], #new-seq: 1`, `^Decode batch \[40\], #running-req: 7`},
		{EraLate2026, false,
			`^Prefill batch, .*#bootstrap-req: 0, #inflight-req: 1, #optimistic-req: 0, cuda graph: False, input throughput \(token/s\): 4\.20$`,
			`^Decode batch, #running-req: 7, .*#queue-req: 0$`},
	} {
		t.Run(tc.era.String(), func(t *testing.T) {
			require.Regexp(t, tc.prefill, FormatPrefillBatch(tc.era, tc.iters, p))
			require.Regexp(t, tc.decode, FormatDecodeBatch(tc.era, tc.iters, dstats))
			era, err := ParseLogEra(tc.era.String())
			require.NoError(t, err)
			require.Equal(t, tc.era, era)
		})
	}
	_, err := ParseLogEra("1999")
	require.Error(t, err)
}

func TestLoggerPrefix(t *testing.T) {
	var b strings.Builder
	l := NewLogger(&b, EraMid2026)
	l.now = func() time.Time { return time.Date(2026, 6, 18, 20, 38, 3, 1e6, time.FixedZone("X", 3600)) }
	l.loc = time.UTC // the prefix is in the process's zone (TZ), here UTC
	topo := Topology{TPSize: 4, DPSize: 4, DPAttention: true}
	l.Logf(topo.Prefix(2, topo.GlobalTP(2)), "hello")
	l.era, l.millis = EraLate2026, true // SGLANG_LOG_MS=1
	l.Logf(Topology{TPSize: 4, DPSize: 1}.Prefix(0, 0), "x")
	l.Logf(Topology{TPSize: 1, DPSize: 1}.Prefix(0, 0), "y")
	require.Equal(t, "[2026-06-18 19:38:03 DP2 TP2] hello\n[2026-06-18 19:38:03.001 TP0] x\n[2026-06-18 19:38:03.001] y\n", b.String())
}

func TestParseEngineArgs(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tc := range []struct {
		name  string
		args  []string
		check func(t *testing.T, c EngineConfig)
		err   string
	}{
		{"space and equals forms", []string{"--disaggregation-mode", "decode", "--port=31000", "--tp-size", "4", "--dp-size=2", "--enable-dp-attention"},
			func(t *testing.T, c EngineConfig) {
				t.Helper()
				require.Equal(t, 31000, c.Port)
				require.Equal(t, Topology{TPSize: 4, DPSize: 2, DPAttention: true}, c.Topology)
			}, ""},
		{"unknown boolean then known flag", []string{"--trust-remote-code", "--disaggregation-mode", "prefill", "--enable-metrics"},
			func(t *testing.T, c EngineConfig) {
				t.Helper()
				require.Equal(t, "prefill", c.Mode)
				require.True(t, c.EnableMetrics)
				require.Equal(t, []ExtraFlag{{Name: "trust-remote-code", Bool: true}}, c.Extra)
			}, ""},
		{"unknown with value and negative number", []string{"--disaggregation-mode=decode", "--mem-fraction-static", "0.85", "--random-seed", "-1"},
			func(t *testing.T, c EngineConfig) {
				t.Helper()
				require.Equal(t, []ExtraFlag{{Name: "mem-fraction-static", Value: "0.85"}, {Name: "random-seed", Value: "-1"}}, c.Extra)
				require.Contains(t, c.ServerArgsDump(), "mem_fraction_static=0.85, random_seed=-1)")
			}, ""},
		{"overlap flag and backend", []string{"--disaggregation-mode", "decode", "--disable-overlap-schedule", "--disaggregation-transfer-backend", "nixl"},
			func(t *testing.T, c EngineConfig) {
				t.Helper()
				require.True(t, c.DisableOverlap)
				require.Contains(t, c.ServerArgsDump(), "disable_overlap_schedule=True, disaggregation_mode='decode', disaggregation_transfer_backend='nixl'")
			}, ""},
		{"served model name defaults to model path", []string{"--disaggregation-mode", "decode", "--model-path", "/m/x"},
			func(t *testing.T, c EngineConfig) {
				t.Helper()
				require.Equal(t, "/m/x", c.ServedModelName)
			}, ""},
		{"mode required", []string{"--port", "1"}, nil, "--disaggregation-mode must be prefill or decode"},
		{"bad int", []string{"--disaggregation-mode", "decode", "--port", "x"}, nil, "flag --port: not an integer"},
		{"missing value", []string{"--disaggregation-mode", "decode", "--port"}, nil, "flag --port needs a value"},
		{"bad sim fault", []string{"--disaggregation-mode", "decode", "--sim-fault", "meltdown"}, nil, `unknown fault "meltdown"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseEngineArgs(tc.args, quiet)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			tc.check(t, c)
		})
	}
}

func TestParseRouterArgs(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	c, err := ParseRouterArgs([]string{"--pd-disaggregation", "--prefill", "http://10.0.0.1:30100", "8998",
		"--prefill", "http://10.0.0.2:30100", "--decode", "http://10.0.0.3:30200", "--host", "0.0.0.0", "--port=30001",
		"--policy", "cache_aware"}, quiet)
	require.NoError(t, err)
	require.Equal(t, []prefillWorker{
		{URL: "http://10.0.0.1:30100", BootstrapHost: "10.0.0.1", BootstrapPort: 8998},
		{URL: "http://10.0.0.2:30100", BootstrapHost: "10.0.0.2", BootstrapPort: 8998},
	}, c.Prefill)
	require.Equal(t, []string{"http://10.0.0.3:30200"}, c.Decode)
	require.Equal(t, 30001, c.Port)
	_, err = ParseRouterArgs([]string{"--prefill", "http://a:1"}, quiet)
	require.ErrorContains(t, err, "--pd-disaggregation")
}

// TestWedgeModel is the causal rule in isolation: only a burst, only with overlap.
func TestWedgeModel(t *testing.T) {
	t0 := time.Unix(0, 0)
	for _, tc := range []struct {
		name    string
		overlap bool
		gaps    []time.Duration
		wedged  bool
	}{
		{"burst with overlap wedges", true, []time.Duration{0, 0, 0}, true},
		{"burst without overlap is harmless", false, []time.Duration{0, 0, 0}, false},
		{"spread-out aborts are harmless", true, []time.Duration{0, time.Second, time.Second}, false},
		{"too few aborts are harmless", true, []time.Duration{0, 0}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newWedgeModel(tc.overlap, 3, 500*time.Millisecond)
			now := t0
			for _, g := range tc.gaps {
				now = now.Add(g)
				m.observeAbort(now)
			}
			require.Equal(t, tc.wedged, m.wedged)
		})
	}
}

func TestParseFault(t *testing.T) {
	f, err := ParseFault([]byte(`{"fault":"slow","ttft":"2s"}`))
	require.NoError(t, err)
	require.Equal(t, 2*time.Second, f.ttft())
	require.NoError(t, f.checkRole("prefill"))
	require.ErrorContains(t, f.checkRole("decode"), "injected into the prefill")
	_, err = ParseFault([]byte(`{"fault":"slow","bogus":1}`))
	require.Error(t, err)
	f, err = ParseFault([]byte(`{"fault":"clear"}`))
	require.NoError(t, err)
	require.NoError(t, f.checkRole("router"))
}

func TestLaunchScriptQuoting(t *testing.T) {
	s := launchScript([]string{"h"}, []string{"A=1"}, []string{"/x y/sim", "engine", "--port", "1", "--flag", "--v", "a b"})
	require.Equal(t, "#!/usr/bin/env bash\n# h\nset -euo pipefail\n\nexport A=1\n\nexec '/x y/sim' engine \\\n  --port 1 \\\n  --flag \\\n  --v 'a b'\n", s)
}
