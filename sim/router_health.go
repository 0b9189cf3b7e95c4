package sim

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// workerHealth is the router's background health check of one worker: it GETs the
// worker's health endpoint every interval and flips the worker unhealthy after
// FailureThreshold consecutive failures, healthy again after SuccessThreshold
// consecutive passes (sgl-router core/worker.rs; the mid-2025 router had no
// thresholds, i.e. both were 1). Workers start healthy: the real router only starts
// serving once every worker answered at startup.
type workerHealth struct {
	url  string
	kind string // "Prefill" or "Decode", as the 2025 router names them

	mu        sync.Mutex
	healthy   bool
	failures  int
	successes int
}

func (w *workerHealth) isHealthy() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.healthy
}

// record applies one check's outcome and reports whether the worker's health flipped.
func (w *workerHealth) record(ok bool, hc HealthCheck) (flipped, healthy bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	was := w.healthy
	if ok {
		w.failures = 0
		w.successes++
		if !w.healthy && w.successes >= hc.SuccessThreshold {
			w.healthy = true
		}
	} else {
		w.successes = 0
		w.failures++
		if w.healthy && w.failures >= hc.FailureThreshold {
			w.healthy = false
		}
	}
	return was != w.healthy, w.healthy
}

// newWorkerHealth lists every worker of the router, prefill first (the order of the
// 2025 router's "Unhealthy servers" list).
func newWorkerHealth(c RouterConfig) []*workerHealth {
	var ws []*workerHealth
	for _, p := range c.Prefill {
		ws = append(ws, &workerHealth{url: p.URL, kind: "Prefill", healthy: true})
	}
	for _, d := range c.Decode {
		ws = append(ws, &workerHealth{url: d, kind: "Decode", healthy: true})
	}
	return ws
}

// checkWorkers runs the background health check until ctx ends. The first round
// comes one interval after start, like a tokio interval that skips its first tick,
// so that a router started alongside its engines does not mark them down at once.
func (rt *Router) checkWorkers(ctx context.Context) {
	if rt.cfg.HealthCheckDisabled {
		return
	}
	hc := rt.cfg.Health
	client := &http.Client{Timeout: hc.Timeout}
	tick := time.NewTicker(hc.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		var wg sync.WaitGroup
		for _, w := range rt.workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := checkOnce(ctx, client, strings.TrimRight(w.url, "/")+hc.Endpoint)
				flipped, healthy := w.record(err == nil, hc)
				switch {
				case flipped && healthy:
					rt.out.logf("INFO", "sglang_router_rs::core::worker", "Worker %s is now healthy", w.url)
				case flipped:
					rt.out.logf("WARN", "sglang_router_rs::core::worker", "Worker %s health check failed: %v", w.url, err)
				}
			}()
		}
		wg.Wait()
	}
}

func checkOnce(ctx context.Context, client *http.Client, url string) error {
	resp, err := get(ctx, client, url)
	if err != nil {
		return fmt.Errorf("health check request failed: %w", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("health check returned status: %s", resp.Status)
	}
	return nil
}

// handleHealth answers GET /health. The 2026 gateway's /health is liveness only: 200
// "OK" whatever its workers do (sgl-model-gateway/src/server.rs@04902695). The 2025
// sgl-router in PD mode reports its workers' background checks: 200 "All servers
// healthy", else 503 "Unhealthy servers: [...]" with Rust's {:?} rendering of the
// list (sgl-router/src/routers/pd_router.rs@03190661).
func (rt *Router) handleHealth(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if rt.cfg.Profile.Router != RouterSGL {
		_, _ = io.WriteString(w, "OK")
		return
	}
	var bad []string
	for _, wk := range rt.workers {
		if !wk.isHealthy() {
			bad = append(bad, fmt.Sprintf("%q", wk.kind+": "+wk.url))
		}
	}
	if len(bad) == 0 {
		_, _ = io.WriteString(w, "All servers healthy")
		return
	}
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = io.WriteString(w, "Unhealthy servers: ["+strings.Join(bad, ", ")+"]")
}
