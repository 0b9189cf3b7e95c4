package sim

import (
	"bytes"
	"fmt"
	"io"
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
	mu        sync.Mutex
	mode      string
	model     string
	era       LogEra
	topo      Topology
	gauges    []schedGauges
	bootFail  []float64
	xferFail  []float64
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
	return &engineMetrics{
		mode: c.Mode, model: c.ServedModelName, era: c.Sim.LogEra, topo: c.Topology,
		gauges: make([]schedGauges, n), bootFail: make([]float64, n), xferFail: make([]float64, n),
		ttft: newHistogram(ttftBuckets), e2e: newHistogram(e2eBuckets),
	}
}

// publish overwrites one rank's gauges, as SGLang's stats functions do.
func (m *engineMetrics) publish(rank int, g schedGauges) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if rank >= 0 && rank < len(m.gauges) {
		m.gauges[rank] = g
	}
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

func (m *engineMetrics) addPrompt(n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.prompt += float64(n)
}

func (m *engineMetrics) addGenerated(n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.generated += float64(n)
}

func (m *engineMetrics) observeTTFT(sec float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ttft.observe(sec)
}

func (m *engineMetrics) finishRequest(e2eSec float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests++
	m.e2e.observe(e2eSec)
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

func (m *engineMetrics) rankLabels(rank int) string {
	dp := ""
	if m.topo.DPAttention && m.topo.DPSize > 1 {
		dp = fmt.Sprintf("dp_rank=\"%d\",", rank)
	}
	return fmt.Sprintf("%sengine_type=%q,model_name=%q,moe_ep_rank=\"0\",pp_rank=\"0\",tp_rank=\"%d\"",
		dp, m.mode, m.model, m.topo.GlobalTP(rank))
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
	if m.era == EraLate2026 {
		bootstrapName = "sglang:num_prefill_bootstrap_queue_reqs"
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
		{"sglang:num_prefill_inflight_queue_reqs", "The number of requests in the prefill inflight queue.", "gauge", func(r int) float64 { return gauges[r].PrefillInflight }},
		{"sglang:num_decode_prealloc_queue_reqs", "The number of requests in the decode prealloc queue.", "gauge", func(r int) float64 { return gauges[r].DecodePrealloc }},
		{"sglang:num_decode_transfer_queue_reqs", "The number of requests in the decode transfer queue.", "gauge", func(r int) float64 { return gauges[r].DecodeTransfer }},
	}
	if m.mode == "prefill" {
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
