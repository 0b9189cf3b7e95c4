package sim

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLookupProfile(t *testing.T) {
	for _, name := range ProfileNames {
		p, err := LookupProfile(name)
		require.NoError(t, err)
		require.Equal(t, name, p.Name)
		require.Equal(t, name, p.Era.String(), "each profile speaks its own era")
		require.GreaterOrEqual(t, p.AbortLatency.Min, 2*time.Second, "SGLang notices a disconnect 2-8 s later")
		require.LessOrEqual(t, p.AbortLatency.Max, 8*time.Second)
	}
	def, err := LookupProfile("")
	require.NoError(t, err)
	require.Equal(t, Profile2026Mid, def.Name, "the incident's build is the default")
	require.Equal(t, RouterGateway, def.Router)
	_, err = LookupProfile("2024-early")
	require.ErrorContains(t, err, `unknown profile "2024-early"`)
}

func TestParseLatencyRange(t *testing.T) {
	for _, tc := range []struct {
		in       string
		min, max time.Duration
		err      string
	}{
		{in: "2s-4s", min: 2 * time.Second, max: 4 * time.Second},
		{in: "0s", min: 0, max: 0},
		{in: "1500ms-1500ms", min: 1500 * time.Millisecond, max: 1500 * time.Millisecond},
		{in: "4s-2s", err: "want 0 <= MIN <= MAX"},
		{in: "soon", err: "bad latency range"},
		{in: "2s-later", err: "bad latency range"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			r, err := ParseLatencyRange(tc.in)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, LatencyRange{Min: tc.min, Max: tc.max}, r)
			back, err := ParseLatencyRange(r.String())
			require.NoError(t, err)
			require.Equal(t, r, back, "String round-trips")
		})
	}
}

// TestAbortLatencyAfter: every delay lies in [Min, Max); aborts of requests that
// arrived and left together are processed together; independent timeouts spread.
func TestAbortLatencyAfter(t *testing.T) {
	r := LatencyRange{Min: 2 * time.Second, Max: 4 * time.Second}
	base := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	seen := map[time.Duration]bool{}
	for i := range 400 {
		arrived := base.Add(time.Duration(i) * 37 * time.Millisecond)
		disconnect := arrived.Add(time.Duration(i%50) * 113 * time.Millisecond)
		d := r.after(arrived, disconnect)
		require.GreaterOrEqual(t, d, r.Min)
		require.Less(t, d, r.Max)
		seen[d.Round(250*time.Millisecond)] = true
	}
	require.Greater(t, len(seen), 4, "independent timeouts see spread-out delays")

	// A burst: eight requests that arrived within 5 ms and left at the same instant.
	disconnect := base.Add(900 * time.Millisecond)
	var at []time.Time
	for i := range 8 {
		arrived := base.Add(time.Duration(i) * 700 * time.Microsecond)
		at = append(at, disconnect.Add(r.after(arrived, disconnect)))
	}
	for _, a := range at {
		require.WithinDuration(t, at[0], a, 10*time.Millisecond, "a burst stays a burst")
	}
	require.Equal(t, 3*time.Second, LatencyRange{Min: 3 * time.Second, Max: 3 * time.Second}.after(base, disconnect))
	require.Zero(t, LatencyRange{}.after(base, disconnect))
}

func TestMergeConfigFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "decode-config.yaml")
	require.NoError(t, os.WriteFile(path, []byte("# comment\n"+
		"disable-overlap-schedule: true\n"+
		"enable-metrics: false   # off\n"+
		"mem-fraction-static: 0.85\n"+
		"served-model-name: \"deepseek-v4\"\n"+
		"cuda-graph-bs: [1, 2, 4]\n"+
		"json-model-override-args:\n  - a\n  - b\n"), 0o644))
	got, file, err := mergeConfigFile([]string{"--port", "1", "--config", path, "--mem-fraction-static", "0.9"})
	require.NoError(t, err)
	require.Equal(t, path, file)
	require.Equal(t, []string{
		"--disable-overlap-schedule", "--mem-fraction-static", "0.85", "--served-model-name", "deepseek-v4",
		"--cuda-graph-bs", "1", "2", "4", "--json-model-override-args", "a", "b",
		"--port", "1", "--mem-fraction-static", "0.9",
	}, got, "config first, so the command line wins; false booleans are left out")

	same, file, err := mergeConfigFile([]string{"--port", "1"})
	require.NoError(t, err)
	require.Empty(t, file)
	require.Equal(t, []string{"--port", "1"}, same)

	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"--config"}, "no config file specified"},
		{[]string{"--config", path, "--config", path}, "multiple config files"},
		{[]string{"--config", filepath.Join(dir, "x.json")}, "must be YAML"},
		{[]string{"--config", filepath.Join(dir, "missing.yaml")}, "config file not found"},
	} {
		_, _, err := mergeConfigFile(tc.args)
		require.ErrorContains(t, err, tc.err)
	}
	nested := filepath.Join(dir, "nested.yaml")
	require.NoError(t, os.WriteFile(nested, []byte("outer:\n  inner: 1\n"), 0o644))
	_, _, err = mergeConfigFile([]string{"--config", nested})
	require.ErrorContains(t, err, "nested mappings are not supported")
}

// TestEffectiveOverlap: the flag, a --config file and EAGLE all turn the overlap
// schedule off, and the effective value is what the engine reports and models.
func TestEffectiveOverlap(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfgFile := filepath.Join(t.TempDir(), "decode-config.yaml")
	require.NoError(t, os.WriteFile(cfgFile, []byte("disable-overlap-schedule: true\n"), 0o644))
	base := []string{"--disaggregation-mode", "decode"}
	for _, tc := range []struct {
		name    string
		args    []string
		profile string
		specV2  string
		off     bool
		note    string
	}{
		{name: "default on", off: false},
		{name: "flag", args: []string{"--disable-overlap-schedule"}, off: true},
		{name: "config", args: []string{"--config", cfgFile}, off: true},
		{name: "eagle", args: []string{"--speculative-algorithm", "EAGLE"}, off: true, note: eagleOverlapMsgNew},
		{name: "nextn is eagle", args: []string{"--speculative-algorithm", "NEXTN"}, off: true, note: eagleOverlapMsgNew},
		{name: "eagle mid-2025 wording", args: []string{"--speculative-algorithm", "EAGLE"}, profile: Profile2025Mid, off: true, note: eagleOverlapMsgOld},
		{name: "eagle spec-v2 keeps overlap", args: []string{"--speculative-algorithm", "EAGLE", "--disable-overlap-schedule"}, specV2: "1", off: false,
			note: "Beta spec is enabled for eagle speculative decoding and overlap schedule is turned on."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(append([]string(nil), base...), tc.args...)
			if tc.profile != "" {
				args = append(args, "--sim-profile", tc.profile)
			}
			t.Setenv("SGLANG_ENABLE_SPEC_V2", tc.specV2)
			c, err := ParseEngineArgs(args, quiet)
			require.NoError(t, err)
			require.Equal(t, tc.off, c.DisableOverlap)
			require.Contains(t, c.ServerArgsDump(), "disable_overlap_schedule="+pyBool(tc.off))
			if tc.note != "" {
				require.Equal(t, []string{tc.note}, c.Notes)
			} else {
				require.Empty(t, c.Notes)
			}
			e := &Engine{cfg: c}
			require.Equal(t, !tc.off, newWedgeModel(!e.cfg.DisableOverlap, 8, time.Second).overlap, "the wedge model sees the effective value")
		})
	}
}

// TestFailureLinesByBackend: NIXL's exceptions carry no reason, mooncake's name it.
func TestFailureLinesByBackend(t *testing.T) {
	for _, tc := range []struct {
		backend, mode, want string
	}{
		{"nixl", "decode", "Decode transfer failed for request rank=2 decode_req.req.rid='r1' decode_req.req.bootstrap_room=42 with exception NIXL KVReceiver Exception"},
		{"nixl", "prefill", "Prefill transfer failed for request rank=2 req.rid='r1' req.bootstrap_room=42 with exception NIXL KVSender Exception"},
		{"mooncake", "decode", "Decode transfer failed for request rank=2 decode_req.req.rid='r1' decode_req.req.bootstrap_room=42 with exception KVTransferError(bootstrap_room=42): Aborted by AbortReq."},
		{"mooncake", "prefill", "Prefill transfer failed for request rank=2 req.rid='r1' req.bootstrap_room=42 with exception KVTransferError(bootstrap_room=42): Aborted by AbortReq."},
	} {
		e := &Engine{cfg: EngineConfig{Mode: tc.mode, TransferBackend: tc.backend}}
		require.Equal(t, tc.want, e.transferFailedLine(2, "r1", 42, ReasonAborted))
	}
	e := &Engine{cfg: EngineConfig{Mode: "prefill", TransferBackend: "nixl"}}
	require.Equal(t, "Prefill bootstrap failed for request rank=0 req.rid='r1' req.bootstrap_room=42 with exception NIXL KVSender Exception",
		e.bootstrapFailedLine(0, "r1", 42, ReasonAborted))
}

func TestRequestIDModes(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil)
	r.Header.Set("X-Request-Id", "hdr")
	require.Equal(t, "hdr", requestID(r, &chatRequest{Rid: "body"}, RequestIDsClient))
	require.Equal(t, "body", requestID(r, &chatRequest{Rid: "body"}, RequestIDsEngine), "only a body rid is honoured")
	minted := requestID(r, &chatRequest{User: "alice"}, RequestIDsEngine)
	require.Regexp(t, `^[0-9a-f]{32}$`, minted, "the engine mints uuid4().hex, ignoring the header and user")
}

// TestMetricNamesByProfile renders a decode and a prefill exposition per profile.
func TestMetricNamesByProfile(t *testing.T) {
	for _, name := range ProfileNames {
		t.Run(name, func(t *testing.T) {
			p, err := LookupProfile(name)
			require.NoError(t, err)
			for _, mode := range []string{"prefill", "decode"} {
				c := EngineConfig{Mode: mode, ServedModelName: "m", Topology: Topology{TPSize: 1, DPSize: 1}, Sim: SimKnobs{Profile: p}}
				m := newEngineMetrics(c)
				var out bytes.Buffer
				require.NoError(t, m.Render(&out))
				require.NotContains(t, out.String(), "realtime_tokens_total", "no series before any token")
				m.addPrompt(100)
				m.addDecodeIteration([]*decodeReq{{rank: 0}, {rank: 0}})
				m.finished(1.5, 100, 7)
				out.Reset()
				require.NoError(t, m.Render(&out))
				text := out.String()
				require.Equal(t, p.InfightTypo, bytes.Contains(out.Bytes(), []byte("sglang:num_prefill_infight_queue_reqs{")))
				require.Equal(t, !p.InfightTypo, bytes.Contains(out.Bytes(), []byte("sglang:num_prefill_inflight_queue_reqs{")))
				require.Equal(t, p.BootstrapGauge, bytes.Contains(out.Bytes(), []byte("sglang:num_prefill_bootstrap_queue_reqs{")))
				require.Equal(t, p.RealtimeTokens, bytes.Contains(out.Bytes(), []byte("# TYPE sglang:realtime_tokens_total counter")))
				require.Contains(t, text, `sglang:generation_tokens_total{model_name="m"} 7.0`, "generation counts finished requests")
				require.Contains(t, text, `sglang:prompt_tokens_total{model_name="m"} 100.0`)
				if p.UnifiedEngineType {
					require.Contains(t, text, `engine_type="unified",model_name="m",pp_rank="0",tp_rank="0"}`)
					require.NotContains(t, text, "moe_ep_rank")
				} else {
					require.Contains(t, text, `engine_type="`+mode+`",model_name="m",moe_ep_rank="0",pp_rank="0",tp_rank="0"}`)
				}
				if p.RealtimeTokens && mode == "decode" {
					require.Contains(t, text, `sglang:realtime_tokens_total{engine_type="decode",mode="decode",model_name="m",moe_ep_rank="0",pp_rank="0",tp_rank="0"} 2.0`)
					require.NotContains(t, text, `mode="prefill_compute"`, "a PD decode computes no prompt")
				}
				if p.RealtimeTokens && mode == "prefill" {
					require.Contains(t, text, `mode="prefill_compute"`)
				}
			}
		})
	}
}

// TestIdleRefreshOfPDGauges: mid-2025 builds left the PD queue gauges alone at idle.
func TestIdleRefreshOfPDGauges(t *testing.T) {
	for _, name := range []string{Profile2025Mid, Profile2026Mid} {
		p, err := LookupProfile(name)
		require.NoError(t, err)
		m := newEngineMetrics(EngineConfig{Mode: "decode", Topology: Topology{TPSize: 1, DPSize: 1}, Sim: SimKnobs{Profile: p}})
		m.publish(0, schedGauges{Running: 3, DecodeTransfer: 2, DecodePrealloc: 1})
		m.publishIdle(0, schedGauges{})
		g := m.published(0)
		require.Zero(t, g.Running, name)
		if p.IdlePDGauges {
			require.Zero(t, g.DecodeTransfer, name)
		} else {
			require.Equal(t, 2.0, g.DecodeTransfer, name)
			require.Equal(t, 1.0, g.DecodePrealloc, name)
		}
	}
}

func TestRouterHealthBody(t *testing.T) {
	for _, tc := range []struct {
		profile  string
		down     bool
		code     int
		body     string
		decodeOK bool
	}{
		{Profile2025Late, false, 200, "All servers healthy", true},
		{Profile2025Late, true, 503, `Unhealthy servers: ["Decode: http://127.0.0.1:2"]`, false},
		{Profile2026Mid, true, 200, "OK", false},
	} {
		p, err := LookupProfile(tc.profile)
		require.NoError(t, err)
		cfg := RouterConfig{Profile: p, Health: p.RouterHealth,
			Prefill: []prefillWorker{{URL: "http://127.0.0.1:1"}}, Decode: []string{"http://127.0.0.1:2"}}
		rt := &Router{cfg: cfg, workers: newWorkerHealth(cfg)}
		if tc.down {
			for range p.RouterHealth.FailureThreshold {
				rt.workers[1].record(false, p.RouterHealth)
			}
		}
		w := httptest.NewRecorder()
		rt.handleHealth(w, httptest.NewRequest(http.MethodGet, "/health", nil))
		require.Equal(t, tc.code, w.Code)
		require.Equal(t, tc.body, w.Body.String())
		require.Equal(t, tc.decodeOK, rt.workers[1].isHealthy())
	}
	// Thresholds: one failure is not enough for a threshold of 3; recovery needs 2 passes.
	hc := HealthCheck{FailureThreshold: 3, SuccessThreshold: 2}
	w := &workerHealth{healthy: true}
	for i, ok := range []bool{false, false, true, false, false, false, true, true} {
		w.record(ok, hc)
		require.Equal(t, i < 5 || i == 7, w.isHealthy(), "after check %d", i)
	}
}
