package sim

import (
	"fmt"
	"strings"
	"time"
)

// Profile is one real SGLang build the simulator impersonates: everything that an
// operator (or a runbook) can see differ between builds of that era, bundled so that
// a runbook can be tested against each build with one flag (`up --profile NAME`).
// What varies within a build (the transfer backend, --enable-metrics, the overlap
// schedule, the host's time zone) is a separate knob on `up`.
//
// The choices:
//
//	                     2025-mid      2025-late     2026-mid (default)  2026-late
//	log era              2025-mid      2025-late     2026-mid            2026-late
//	router               sgl-router    sgl-router    gateway             gateway
//	router health check  10s, 1/1      60s, 3/2      60s, 3/2            60s, 3/2     (interval, failures/successes)
//	/server_info         no            yes           yes                 yes
//	/get_server_info     yes           warns         warns               warns
//	inflight gauge       infight       inflight      inflight            inflight
//	bootstrap gauge      prealloc      prealloc      prealloc            bootstrap
//	realtime_tokens      no            no            yes                 yes
//	PD gauges at idle    no            yes           yes                 yes
//	engine_type label    unified       mode          mode                mode
//	kv_transfer_* gauges no            yes           yes                 yes
//	SGLANG_LOG_MS        ignored       honoured      honoured            honoured
//	EAGLE overlap note   "eagle"       "eagle3 or standalone" (all later builds)
//	abort latency        2s-4s         2s-4s         4s-8s               4s-8s
//
// Their sources (sgl-project/sglang unless named; the commits are the stored
// versions read; see sim/FIDELITY.md):
//
//   - log era: FIDELITY.md and the team's reference notes §1.2 and §1.3 (log samples per era).
//   - router /health: sgl-router/src/routers/pd_router.rs@03190661 ("All servers
//     healthy", else 503 "Unhealthy servers: {:?}"); the gateway's liveness "OK":
//     sgl-model-gateway/src/server.rs@04902695.
//   - router health check: sgl-router/src/core/worker.rs@03190661 (no thresholds; the
//     interval is worker_startup_check_interval, 10 in mid-2025 RouterArgs); later
//     builds: 60 s, 3 failures, 2 successes (router docs table, FIDELITY.md and the team's reference notes §4.3).
//   - /server_info: canonical by PR #14533 (2025-12-06), /get_server_info then a
//     deprecated alias logging "Endpoint '/get_server_info' is deprecated …"
//     (http_server.py, as shown in docs/basic_usage/native_api.ipynb, 2026-03).
//   - gauge names: the mid-2025 SchedulerMetricsCollector exports
//     "sglang:num_prefill_infight_queue_reqs"; metrics/collector.py@00ae9c15 spells
//     it inflight and keeps …_prealloc_…; the newest collector has
//     "sglang:num_prefill_bootstrap_queue_reqs". The mid-2025 collector has no
//     kv_transfer_* gauges; its label set is {engine_type="unified",…} without
//     moe_ep_rank (FIDELITY.md and the team's reference notes §3.1).
//   - realtime_tokens_total: added by PR #15198 (2025-12-15), unified as
//     realtime_tokens_total{mode} by PR #15747 (2025-12-24); counted every decode
//     iteration in scheduler_components/metrics_reporter.py@00df707e.
//   - PD gauges at idle: FIDELITY.md and the team's reference notes §7 (mid-2025 builds wrote none at idle).
//   - SGLANG_LOG_MS: the mid-2025 utils.configure_logger has the millisecond format
//     commented out; environ.py's Envs.SGLANG_LOG_MS comes later.
//   - EAGLE: server_args.py _handle_speculative_decoding ("…eagle speculative
//     decoding." in mid-2025, "…eagle3 or standalone speculative decoding." from
//     v0.5.6; SGLANG_ENABLE_SPEC_V2 keeps overlap on).
//   - abort latency: tokenizer_manager.py create_abort_task sleeps 2 s and
//     SGLANG_REQUEST_STATE_WAIT_TIMEOUT is 4 s; the gateway's dispatch comment says
//     the engine "aborts the request in ~4-8s"
//     (sgl-model-gateway/src/routers/http/pd_router/dispatch.rs@03744dbe).
//   - request ids, every build: engines ignore X-Request-Id (serving_base.py@012bcb5f)
//     and both routers drop "rid" from chat requests (sgl-router
//     openai_api_types.rs@1d265cf8 has no rid in ChatCompletionRequest; gateway:
//     smg-project/smg#1874).
type Profile struct {
	Name string
	Era  LogEra
	// Router is the PD router the build shipped with.
	Router RouterKind
	// ServerInfo reports whether the canonical /server_info exists; /get_server_info
	// is served by every build, as a deprecated alias that warns once /server_info exists.
	ServerInfo bool
	// InfightTypo spells the inflight-queue gauge sglang:num_prefill_infight_queue_reqs.
	InfightTypo bool
	// BootstrapGauge names the prefill bootstrap-queue gauge …_bootstrap_… instead of …_prealloc_….
	BootstrapGauge bool
	// RealtimeTokens exports sglang:realtime_tokens_total{mode=…}.
	RealtimeTokens bool
	// IdlePDGauges: the idle refresh also rewrites the PD queue gauges.
	IdlePDGauges bool
	// UnifiedEngineType labels every series engine_type="unified" and omits moe_ep_rank.
	UnifiedEngineType bool
	// KVTransferGauges exports sglang:kv_transfer_speed_gb_s and …latency_ms on prefill.
	KVTransferGauges bool
	// LogMillisEnv: the build honours SGLANG_LOG_MS (milliseconds in the line prefix).
	LogMillisEnv bool
	// EagleOverlapMsg is the warning logged when EAGLE speculative decoding forces
	// the overlap schedule off.
	EagleOverlapMsg string
	// AbortLatency is the default delay between a client's disconnect and the
	// engine processing the abort, on this build's router path.
	AbortLatency LatencyRange
	// RouterHealth are the router's worker health-check defaults.
	RouterHealth HealthCheck
}

// RouterKind is the PD router a build shipped with.
type RouterKind string

const (
	// RouterSGL is the 2025 Rust sgl-router: /health reflects every worker's
	// background health check.
	RouterSGL RouterKind = "sgl-router"
	// RouterGateway is the 2026 SGLang Model Gateway: /health is liveness only.
	RouterGateway RouterKind = "gateway"
)

// HealthCheck is a router's background health check of its workers.
type HealthCheck struct {
	Interval time.Duration
	Timeout  time.Duration
	// FailureThreshold consecutive failed checks mark a worker unhealthy;
	// SuccessThreshold consecutive passed checks mark it healthy again.
	FailureThreshold int
	SuccessThreshold int
	Endpoint         string
}

// Profile names accepted by `up --profile` and --sim-profile.
const (
	Profile2025Mid  = "2025-mid"
	Profile2025Late = "2025-late"
	Profile2026Mid  = "2026-mid"
	Profile2026Late = "2026-late"
	// DefaultProfile is the incident's build.
	DefaultProfile = Profile2026Mid
)

// Overlap-disable warnings of SGLang's server_args, by era.
const (
	eagleOverlapMsgOld = "Overlap scheduler is disabled because of using eagle speculative decoding."
	eagleOverlapMsgNew = "Overlap scheduler is disabled because of using eagle3 or standalone speculative decoding."
)

var (
	routerHealth2025Mid = HealthCheck{Interval: 10 * time.Second, Timeout: 5 * time.Second, FailureThreshold: 1, SuccessThreshold: 1, Endpoint: "/health"}
	routerHealthLater   = HealthCheck{Interval: 60 * time.Second, Timeout: 5 * time.Second, FailureThreshold: 3, SuccessThreshold: 2, Endpoint: "/health"}
	abortViaSGLRouter   = LatencyRange{Min: 2 * time.Second, Max: 4 * time.Second}
	abortViaGateway     = LatencyRange{Min: 4 * time.Second, Max: 8 * time.Second}
)

var profiles = map[string]Profile{
	Profile2025Mid: {
		Name: Profile2025Mid, Era: EraMid2025, Router: RouterSGL, ServerInfo: false, InfightTypo: true,
		IdlePDGauges: false, UnifiedEngineType: true, KVTransferGauges: false, LogMillisEnv: false,
		EagleOverlapMsg: eagleOverlapMsgOld, AbortLatency: abortViaSGLRouter, RouterHealth: routerHealth2025Mid,
	},
	Profile2025Late: {
		Name: Profile2025Late, Era: EraLate2025, Router: RouterSGL, ServerInfo: true,
		IdlePDGauges: true, KVTransferGauges: true, LogMillisEnv: true,
		EagleOverlapMsg: eagleOverlapMsgNew, AbortLatency: abortViaSGLRouter, RouterHealth: routerHealthLater,
	},
	Profile2026Mid: {
		Name: Profile2026Mid, Era: EraMid2026, Router: RouterGateway, ServerInfo: true, RealtimeTokens: true,
		IdlePDGauges: true, KVTransferGauges: true, LogMillisEnv: true,
		EagleOverlapMsg: eagleOverlapMsgNew, AbortLatency: abortViaGateway, RouterHealth: routerHealthLater,
	},
	Profile2026Late: {
		Name: Profile2026Late, Era: EraLate2026, Router: RouterGateway, ServerInfo: true, RealtimeTokens: true,
		BootstrapGauge: true, IdlePDGauges: true, KVTransferGauges: true, LogMillisEnv: true,
		EagleOverlapMsg: eagleOverlapMsgNew, AbortLatency: abortViaGateway, RouterHealth: routerHealthLater,
	},
}

// ProfileNames lists the profiles, oldest first.
var ProfileNames = []string{Profile2025Mid, Profile2025Late, Profile2026Mid, Profile2026Late}

// LookupProfile returns the named profile ("" is the default).
func LookupProfile(name string) (Profile, error) {
	if strings.TrimSpace(name) == "" {
		name = DefaultProfile
	}
	p, ok := profiles[strings.ToLower(strings.TrimSpace(name))]
	if !ok {
		return Profile{}, fmt.Errorf("unknown profile %q (want %s)", name, strings.Join(ProfileNames, ", "))
	}
	return p, nil
}

// LatencyRange is a MIN-MAX delay such as --abort-latency 2s-4s.
type LatencyRange struct {
	Min, Max time.Duration
}

// String renders the range the way ParseLatencyRange reads it.
func (r LatencyRange) String() string {
	if r.Min == r.Max {
		return r.Min.String()
	}
	return r.Min.String() + "-" + r.Max.String()
}

// ParseLatencyRange reads "2s-4s" (or a single duration, "0s", for a fixed delay).
func ParseLatencyRange(s string) (LatencyRange, error) {
	lo, hi, ranged := strings.Cut(strings.TrimSpace(s), "-")
	var r LatencyRange
	var err error
	if r.Min, err = time.ParseDuration(lo); err != nil {
		return r, fmt.Errorf("bad latency range %q (want MIN-MAX such as 2s-4s): %w", s, err)
	}
	r.Max = r.Min
	if ranged {
		if r.Max, err = time.ParseDuration(hi); err != nil {
			return r, fmt.Errorf("bad latency range %q (want MIN-MAX such as 2s-4s): %w", s, err)
		}
	}
	if r.Min < 0 || r.Max < r.Min {
		return r, fmt.Errorf("bad latency range %q: want 0 <= MIN <= MAX", s)
	}
	return r, nil
}

// after returns when an abort noticed at disconnect is processed, for a request that
// arrived at arrived. SGLang's tokenizer looks at a waiting request's client every
// SGLANG_REQUEST_STATE_WAIT_TIMEOUT from the moment the request arrived (and a
// streaming response sleeps before aborting), so the abort is processed at the first
// such tick at least Min after the disconnect: requests that arrived and left
// together are aborted together (a burst stays a burst), while independent client
// timeouts see delays spread over [Min, Max).
func (r LatencyRange) after(arrived, disconnect time.Time) time.Duration {
	period := r.Max - r.Min
	if period <= 0 {
		return r.Min
	}
	earliest := disconnect.Add(r.Min)
	ticks := earliest.Sub(arrived) / period
	at := arrived.Add(ticks * period)
	for at.Before(earliest) {
		at = at.Add(period)
	}
	return at.Sub(disconnect)
}
