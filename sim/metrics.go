package sim

import (
	"bytes"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
)

// schedGauges are the scheduler gauges one logging rank exports. They are written
// only when SGLang writes them (a prefill batch, a decode log interval, an idle
// refresh), so between writes they are "last known", never live (reference §3.1).
type schedGauges struct {
	Running         float64
	Queue           float64
	GenThroughput   float64
	CacheHitRate    float64
	TokenUsage      float64
	UsedTokens      float64
	PrefillPrealloc float64
	PrefillInflight float64
	DecodePrealloc  float64
	DecodeTransfer  float64
}

// engineMetrics holds everything /metrics exposes. Counters advance when their event
// happens; gauges only change through publish.
type engineMetrics struct {
	mu      sync.Mutex
	mode    string
	model   string
	profile Profile
	topo    Topology
	gauges  []schedGauges
	// realtime is sglang:realtime_tokens_total per logging rank and mode: the
	// scheduler's live counter (every decode iteration, every prefill batch).
	realtime []map[string]float64
	bootFail []float64
	xferFail []float64
	// prompt, generated and requests are the tokenizer's counters: they advance
	// once per FINISHED request (observe_one_finished_request), by its token counts.
	prompt    float64
	generated float64
	requests  float64
	ttft      *histogram
	e2e       *histogram
	kvSpeed   float64
	kvLatency float64

	// staleLeft scrapes still show staleValue as rank 0's num_running_reqs: the
	// stale-sample fault, the incident's "2 zombie requests" red herring.
	staleLeft  int
	staleValue float64
}

func newEngineMetrics(c EngineConfig) *engineMetrics {
	n := c.Topology.LoggingRanks()
	m := &engineMetrics{
		mode: c.Mode, model: c.ServedModelName, profile: c.Sim.Profile, topo: c.Topology,
		gauges: make([]schedGauges, n), bootFail: make([]float64, n), xferFail: make([]float64, n),
		realtime: make([]map[string]float64, n),
		ttft:     newHistogram(ttftBuckets), e2e: newHistogram(e2eBuckets),
	}
	for i := range m.realtime {
		m.realtime[i] = map[string]float64{}
	}
	return m
}

// publish overwrites one rank's gauges, as SGLang's stats functions do.
func (m *engineMetrics) publish(rank int, g schedGauges) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if rank >= 0 && rank < len(m.gauges) {
		m.gauges[rank] = g
	}
}

// publishIdle is the idle refresh's write. Builds before late 2025 wrote no PD queue
// gauges at idle, so those keep their last batch-time value there.
func (m *engineMetrics) publishIdle(rank int, g schedGauges) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if rank < 0 || rank >= len(m.gauges) {
		return
	}
	if !m.profile.IdlePDGauges {
		old := m.gauges[rank]
		g.PrefillPrealloc, g.PrefillInflight = old.PrefillPrealloc, old.PrefillInflight
		g.DecodePrealloc, g.DecodeTransfer = old.DecodePrealloc, old.DecodeTransfer
	}
	m.gauges[rank] = g
}

// published returns one rank's last written gauges.
func (m *engineMetrics) published(rank int) schedGauges {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.gauges[rank]
}

func (m *engineMetrics) addTransferFailed(rank int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.xferFail[rank%len(m.xferFail)]++
}

func (m *engineMetrics) addBootstrapFailed(rank int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.bootFail[rank%len(m.bootFail)]++
}

// addPrompt records that a forward pass computed n prompt tokens: realtime
// prefill_compute tokens on a prefill engine (rank 0, the only logging rank there).
// A PD decode engine computes no prompt (its KV arrives), so it records nothing.
// prompt_tokens_total is the tokenizer's, counted when a request finishes.
func (m *engineMetrics) addPrompt(n int) {
	if m.mode != "prefill" || n <= 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.realtime[0]["prefill_compute"] += float64(n)
}

// addDecodeIteration records one decode iteration of the running batch: every
// running request produced one token, counted live on its DP rank as realtime
// decode tokens (metrics_reporter.py: "Every-iteration work: realtime token
// counting"). generation_tokens_total does not move until requests finish.
func (m *engineMetrics) addDecodeIteration(running []*decodeReq) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range running {
		m.realtime[r.rank%len(m.realtime)]["decode"]++
	}
}

// finished is the tokenizer's observe_one_finished_request: one finished request
// with its prompt and completion token counts and its end-to-end latency.
func (m *engineMetrics) finished(e2eSec float64, prompt, completion int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.prompt += float64(prompt)
	m.generated += float64(completion)
	m.requests++
	m.e2e.observe(e2eSec)
}

func (m *engineMetrics) observeTTFT(sec float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ttft.observe(sec)
}

func (m *engineMetrics) setKV(speedGBs, latencyMs float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.kvSpeed, m.kvLatency = speedGBs, latencyMs
}

func (m *engineMetrics) setStale(scrapes int, value float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.staleLeft, m.staleValue = scrapes, value
}

// rankLabels renders one logging rank's label set (plus extra pairs), sorted by name
// as the multiprocess collector exposes them.
func (m *engineMetrics) rankLabels(rank int, extra ...[2]string) string {
	engineType := m.mode
	pairs := [][2]string{{"model_name", m.model}, {"pp_rank", "0"}, {"tp_rank", fmt.Sprint(m.topo.GlobalTP(rank))}}
	if m.profile.UnifiedEngineType {
		// Mid-2025 builds hard-coded engine_type and had no moe_ep_rank label.
		engineType = "unified"
	} else {
		pairs = append(pairs, [2]string{"moe_ep_rank", "0"})
	}
	pairs = append(pairs, [2]string{"engine_type", engineType})
	if m.topo.DPAttention && m.topo.DPSize > 1 {
		pairs = append(pairs, [2]string{"dp_rank", fmt.Sprint(rank)})
	}
	pairs = append(pairs, extra...)
	sort.Slice(pairs, func(i, j int) bool { return pairs[i][0] < pairs[j][0] })
	parts := make([]string, len(pairs))
	for i, p := range pairs {
		parts[i] = fmt.Sprintf("%s=%q", p[0], p[1])
	}
	return strings.Join(parts, ",")
}

// Render writes the Prometheus text exposition, consuming one stale-sample scrape
// if that fault is armed.
func (m *engineMetrics) Render(w io.Writer) error {
	m.mu.Lock()
	var b bytes.Buffer
	gauges := append([]schedGauges(nil), m.gauges...)
	if m.staleLeft > 0 {
		m.staleLeft--
		gauges[0].Running = m.staleValue
	}
	bootstrapName := "sglang:num_prefill_prealloc_queue_reqs"
	if m.profile.BootstrapGauge {
		bootstrapName = "sglang:num_prefill_bootstrap_queue_reqs"
	}
	inflightName, inflightHelp := "sglang:num_prefill_inflight_queue_reqs", "The number of requests in the prefill inflight queue."
	if m.profile.InfightTypo {
		inflightName, inflightHelp = "sglang:num_prefill_infight_queue_reqs", "The number of requests in the prefill infight queue."
	}
	type family struct {
		name, help, typ string
		val             func(r int) float64
	}
	fams := []family{
		{"sglang:num_running_reqs", "The number of running requests.", "gauge", func(r int) float64 { return gauges[r].Running }},
		{"sglang:num_queue_reqs", "The number of requests in the waiting queue.", "gauge", func(r int) float64 { return gauges[r].Queue }},
		{"sglang:num_grammar_queue_reqs", "The number of requests in the grammar waiting queue.", "gauge", func(int) float64 { return 0 }},
		{"sglang:gen_throughput", "The generation throughput (token/s).", "gauge", func(r int) float64 { return gauges[r].GenThroughput }},
		{"sglang:cache_hit_rate", "The prefix cache hit rate.", "gauge", func(r int) float64 { return gauges[r].CacheHitRate }},
		{"sglang:token_usage", "The token usage.", "gauge", func(r int) float64 { return gauges[r].TokenUsage }},
		{"sglang:num_used_tokens", "The number of used tokens.", "gauge", func(r int) float64 { return gauges[r].UsedTokens }},
		{"sglang:num_retracted_reqs", "The number of retracted requests.", "gauge", func(int) float64 { return 0 }},
		{bootstrapName, "The number of requests in the prefill bootstrap queue.", "gauge", func(r int) float64 { return gauges[r].PrefillPrealloc }},
		{inflightName, inflightHelp, "gauge", func(r int) float64 { return gauges[r].PrefillInflight }},
		{"sglang:num_decode_prealloc_queue_reqs", "The number of requests in the decode prealloc queue.", "gauge", func(r int) float64 { return gauges[r].DecodePrealloc }},
		{"sglang:num_decode_transfer_queue_reqs", "The number of requests in the decode transfer queue.", "gauge", func(r int) float64 { return gauges[r].DecodeTransfer }},
	}
	if m.mode == "prefill" && m.profile.KVTransferGauges {
		fams = append(fams,
			family{"sglang:kv_transfer_speed_gb_s", "The transfer speed of the KV cache in GB/s.", "gauge", func(int) float64 { return m.kvSpeed }},
			family{"sglang:kv_transfer_latency_ms", "The transfer latency of the KV cache in ms.", "gauge", func(int) float64 { return m.kvLatency }})
	}
	fams = append(fams,
		family{"sglang:num_bootstrap_failed_reqs_total", "The number of bootstrap failed requests.", "counter", func(r int) float64 { return m.bootFail[r] }},
		family{"sglang:num_transfer_failed_reqs_total", "The number of transfer failed requests.", "counter", func(r int) float64 { return m.xferFail[r] }})
	for _, f := range fams {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", f.name, f.help, f.name, f.typ)
		for r := range gauges {
			fmt.Fprintf(&b, "%s{%s} %s\n", f.name, m.rankLabels(r), promFloat(f.val(r)))
		}
	}
	m.renderRealtime(&b)
	model := fmt.Sprintf("model_name=%q", m.model)
	for _, c := range []struct {
		name, help string
		v          float64
	}{
		{"sglang:prompt_tokens_total", "Number of prefill tokens processed.", m.prompt},
		{"sglang:generation_tokens_total", "Number of generation tokens processed.", m.generated},
		{"sglang:num_requests_total", "Number of requests processed.", m.requests},
	} {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s counter\n%s{%s} %s\n", c.name, c.help, c.name, c.name, model, promFloat(c.v))
	}
	m.ttft.write(&b, "sglang:time_to_first_token_seconds", "Histogram of time to first token in seconds.", model)
	m.e2e.write(&b, "sglang:e2e_request_latency_seconds", "Histogram of End-to-end request latency in seconds", model)
	m.mu.Unlock()
	_, err := w.Write(b.Bytes())
	return err
}

// renderRealtime writes sglang:realtime_tokens_total on the builds that have it. Like
// SGLang's multiprocess collector, it shows only the series that were incremented
// (newer builds skip zero deltas), so a fresh engine shows no family at all.
func (m *engineMetrics) renderRealtime(b *bytes.Buffer) {
	if !m.profile.RealtimeTokens {
		return
	}
	var lines []string
	for r, modes := range m.realtime {
		for _, mode := range []string{"decode", "prefill_cache", "prefill_compute"} {
			if v, ok := modes[mode]; ok {
				lines = append(lines, fmt.Sprintf("sglang:realtime_tokens_total{%s} %s\n", m.rankLabels(r, [2]string{"mode", mode}), promFloat(v)))
			}
		}
	}
	if len(lines) == 0 {
		return
	}
	b.WriteString("# HELP sglang:realtime_tokens_total Total number of tokens processed (updated on each log interval). mode: prefill_compute, prefill_cache, decode.\n")
	b.WriteString("# TYPE sglang:realtime_tokens_total counter\n")
	for _, l := range lines {
		b.WriteString(l)
	}
}
