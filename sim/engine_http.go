package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

func (e *Engine) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", e.handleHealth)
	mux.HandleFunc("GET /health_generate", e.handleHealth)
	mux.HandleFunc("GET /v1/models", e.handleModels)
	mux.HandleFunc("GET /model_info", e.handleModelInfo)
	mux.HandleFunc("GET /get_model_info", e.handleModelInfo)
	// /get_server_info is every build's; /server_info became the canonical path
	// (late 2025), after which the old one warns on every call.
	mux.HandleFunc("GET /get_server_info", e.handleGetServerInfo)
	if e.cfg.Sim.Profile.ServerInfo {
		mux.HandleFunc("GET /server_info", e.handleServerInfo)
	}
	mux.HandleFunc("POST /v1/chat/completions", e.handleChat)
	// Without --enable-metrics SGLang registers no /metrics route at all.
	if e.cfg.EnableMetrics {
		mux.HandleFunc("GET /metrics", e.handleMetrics)
	}
	mux.HandleFunc("POST /_sim/fault", e.handleFault)
	mux.HandleFunc("GET /_sim/state", e.handleState)
	mux.HandleFunc("/", handleNotFound)
	return withAccessLog(e.log, mux)
}

// handleNotFound answers an unknown path the way FastAPI does.
func handleNotFound(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusNotFound, map[string]any{"detail": "Not Found"})
}

// handleHealth follows SGLang's health_generate: 503 while starting, otherwise a
// one-token generation served locally (in PD mode through a fake bootstrap, never the
// real KV path), which succeeds as soon as the scheduler produces any output. Hence a
// decode whose real transfers are wedged still answers 200, while a prefill stuck in
// a forward pass times out after SGLANG_HEALTH_CHECK_TIMEOUT.
func (e *Engine) handleHealth(w http.ResponseWriter, r *http.Request) {
	if !e.ready.Load() {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	if !e.sched.healthStuck() {
		w.WriteHeader(http.StatusOK)
		return
	}
	tic := time.Now()
	deadline := time.NewTimer(e.healthWait)
	defer deadline.Stop()
	poll := time.NewTicker(50 * time.Millisecond)
	defer poll.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-poll.C:
			if !e.sched.healthStuck() {
				w.WriteHeader(http.StatusOK)
				return
			}
		case <-deadline.C:
			last := time.Unix(0, e.lastOutput.Load())
			e.log.Logf("", "Health check failed. Server couldn't get a response from detokenizer for last %s seconds. tic start time: %s. last_heartbeat time: %s",
				strconv.FormatFloat(e.healthWait.Seconds(), 'f', -1, 64), e.log.Clock(tic), e.log.Clock(last))
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func (e *Engine) handleModels(w http.ResponseWriter, _ *http.Request) {
	m := e.cfg.ServedModelName
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{map[string]any{
		"id": m, "object": "model", "created": time.Now().Unix(), "owned_by": "sglang", "root": m,
		"parent": nil, "max_model_len": 163840,
	}}})
}

func (e *Engine) handleModelInfo(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"model_path": e.cfg.ModelPath, "tokenizer_path": e.cfg.ModelPath, "is_generation": true,
		"preferred_sampling_params": nil, "weight_version": "default",
	})
}

// handleGetServerInfo is the old path; once /server_info exists it is a deprecated
// alias that logs a warning on every call (http_server.py).
func (e *Engine) handleGetServerInfo(w http.ResponseWriter, r *http.Request) {
	if e.cfg.Sim.Profile.ServerInfo {
		e.log.Logf("", "Endpoint '/get_server_info' is deprecated and will be removed in a future version. Please use '/server_info' instead.")
	}
	e.handleServerInfo(w, r)
}

// handleServerInfo reports the effective server arguments, overlap schedule included.
func (e *Engine) handleServerInfo(w http.ResponseWriter, r *http.Request) {
	// internal_states is a round-trip to the scheduler: a blocked loop never answers.
	if e.sched.roundTrip(r.Context()) != nil {
		return
	}
	c := e.cfg
	states := make([]any, 0, len(e.metrics.gauges))
	for r := range e.metrics.gauges {
		g := e.metrics.published(r)
		states = append(states, map[string]any{
			"last_gen_throughput": g.GenThroughput,
			"memory_usage":        map[string]any{"token_capacity": c.Sim.MaxTotalTokens},
		})
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"model_path": c.ModelPath, "served_model_name": c.ServedModelName, "host": c.Host, "port": c.Port,
		"tp_size": c.Topology.TPSize, "dp_size": c.Topology.DPSize, "enable_dp_attention": c.Topology.DPAttention,
		"disaggregation_mode": c.Mode, "disaggregation_transfer_backend": c.TransferBackend,
		"disaggregation_bootstrap_port": c.BootstrapPort, "disable_overlap_schedule": c.DisableOverlap,
		"speculative_algorithm": nilIfEmpty(c.SpeculativeAlgorithm), "enable_metrics": c.EnableMetrics,
		"decode_log_interval": c.DecodeLogInterval,
		"scheduler_info":      map[string]any{"max_total_num_tokens": c.Sim.MaxTotalTokens},
		"internal_states":     states,
		"version":             "0.5.12-sglang-sim",
	})
}

func (e *Engine) handleMetrics(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_ = e.metrics.Render(w)
}

func (e *Engine) handleChat(w http.ResponseWriter, r *http.Request) {
	if !e.ready.Load() {
		apiError(w, http.StatusServiceUnavailable, "ServiceUnavailableError", errNotReady.Error())
		return
	}
	c, err := decodeChatRequest(r)
	if err != nil {
		apiError(w, http.StatusBadRequest, "BadRequestError", err.Error())
		return
	}
	if c.BootstrapRoom == nil || c.BootstrapPort == nil || c.BootstrapHost == "" {
		apiError(w, http.StatusBadRequest, "BadRequestError",
			"Disaggregated request received without bootstrap room id: send it through the PD router")
		return
	}
	rid := requestID(r, c, e.cfg.Sim.RequestIDs)
	e.tags.note(rid, r.Header.Get(simTagHeader))
	e.sched.serveChat(w, r, c, rid)
}

// nilIfEmpty renders an unset string argument as JSON null, like Python's None.
func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// afterDisconnect processes the abort a client's disconnect causes after the
// configured --sim-abort-latency (SGLang notices a disconnect seconds later, see
// LatencyRange.after); with no latency it runs at once. arrived is when the request
// reached this engine.
func (e *Engine) afterDisconnect(arrived time.Time, abort func()) {
	d := e.cfg.Sim.AbortLatency.after(arrived, time.Now())
	if d <= 0 {
		abort()
		return
	}
	time.AfterFunc(d, abort)
}

// handleFault is the admin endpoint POST /_sim/fault.
func (e *Engine) handleFault(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<16))
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": fmt.Sprintf("read body: %v", err)})
		return
	}
	f, err := ParseFault(body)
	if err == nil {
		err = f.checkRole(e.cfg.Mode)
	}
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": err.Error()})
		return
	}
	e.diag.Info("fault injected", "fault", f.Name)
	if f.Name == FaultCrash || f.Name == FaultDecodeCrash {
		writeJSON(w, http.StatusOK, map[string]any{"ok": true, "fault": f.Name})
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
		// The answer is flushed first so the caller learns the crash was accepted.
		go e.crash(f.ExitCode)
		return
	}
	if err := e.sched.applyFault(f); err != nil {
		writeJSON(w, http.StatusConflict, map[string]any{"error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "fault": f.Name, "state": e.sched.state()})
}

// handleState is GET /_sim/state: the simulator's ground truth, for tests only. An
// operator-facing check must not use it, since real SGLang has nothing like it.
func (e *Engine) handleState(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, e.tags.annotate(e.sched.state()))
}
