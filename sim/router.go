package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Router is the simulated sglang_router in PD mode: for every request it picks a
// prefill and a decode worker, assigns a random 63-bit bootstrap room, sends the
// request to both concurrently and streams decode's answer back. A client that goes
// away cancels both upstream requests, which the engines turn into aborts.
type Router struct {
	cfg    RouterConfig
	out    *routerLog
	diag   *slog.Logger
	client *http.Client
	next   atomic.Uint64
	exit   func(int)
	// workers are the background health states of every worker.
	workers []*workerHealth
}

// routerLog writes lines in the Rust router's tracing format, one Write per line.
type routerLog struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *routerLog) logf(level, target, format string, args ...any) {
	line := fmt.Sprintf("%s %5s %s: %s\n", time.Now().UTC().Format("2006-01-02T15:04:05.000000Z"), level, target, fmt.Sprintf(format, args...))
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = io.WriteString(l.w, line)
}

// RunRouter runs the router until ctx is cancelled or a fault ends the process.
func RunRouter(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	diag := slog.New(slog.NewTextHandler(stderr, nil)).With("component", "sglang-sim router")
	cfg, err := ParseRouterArgs(args, diag)
	if err != nil {
		return err
	}
	transport := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        2048,
		MaxIdleConnsPerHost: 1024,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	rt := &Router{cfg: cfg, out: &routerLog{w: stdout}, diag: diag, exit: os.Exit,
		client: &http.Client{Transport: transport, Timeout: cfg.RequestTimeout}, workers: newWorkerHealth(cfg)}
	return rt.serve(ctx)
}

func (rt *Router) serve(ctx context.Context) error {
	addr := net.JoinHostPort(rt.cfg.Host, strconv.Itoa(rt.cfg.Port))
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		rt.out.logf("ERROR", "sglang_router_rs::server", "Failed to bind %s: %v", addr, err)
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	for _, p := range rt.cfg.Prefill {
		rt.out.logf("INFO", "sglang_router_rs::routers::pd_router", "Added prefill worker %s (bootstrap port %d)", p.URL, p.BootstrapPort)
	}
	for _, d := range rt.cfg.Decode {
		rt.out.logf("INFO", "sglang_router_rs::routers::pd_router", "Added decode worker %s", d)
	}
	rt.out.logf("INFO", "sglang_router_rs::server", "Starting server on %s", addr)
	srv := &http.Server{Handler: rt.routes(), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	go rt.checkWorkers(ctx)
	for _, name := range rt.cfg.Faults {
		if f, err := ParseFault([]byte(`{"fault":` + strconv.Quote(name) + `}`)); err == nil {
			rt.apply(f)
		}
	}
	select {
	case <-ctx.Done():
	case err := <-served:
		return fmt.Errorf("http server: %w", err)
	}
	rt.out.logf("INFO", "sglang_router_rs::server", "Shutting down")
	shutCtx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil {
		_ = srv.Close()
	}
	return nil
}

func (rt *Router) routes() http.Handler {
	mux := http.NewServeMux()
	ok := func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "OK") }
	mux.HandleFunc("GET /health", rt.handleHealth)
	mux.HandleFunc("GET /liveness", ok)
	mux.HandleFunc("GET /readiness", ok)
	mux.HandleFunc("GET /workers", rt.handleWorkers)
	mux.HandleFunc("GET /v1/models", rt.handleModels)
	mux.HandleFunc("POST /v1/chat/completions", rt.handleChat)
	mux.HandleFunc("POST /_sim/fault", rt.handleFault)
	mux.HandleFunc("GET /_sim/state", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"role": "router", "prefill": rt.cfg.Prefill, "decode": rt.cfg.Decode})
	})
	return mux
}

func (rt *Router) handleWorkers(w http.ResponseWriter, _ *http.Request) {
	var ws []any
	for i, p := range rt.cfg.Prefill {
		ws = append(ws, map[string]any{"url": p.URL, "worker_type": "prefill", "bootstrap_port": p.BootstrapPort, "is_healthy": rt.workers[i].isHealthy()})
	}
	for i, d := range rt.cfg.Decode {
		ws = append(ws, map[string]any{"url": d, "worker_type": "decode", "is_healthy": rt.workers[len(rt.cfg.Prefill)+i].isHealthy()})
	}
	writeJSON(w, http.StatusOK, map[string]any{"workers": ws, "total": len(ws)})
}

func (rt *Router) handleModels(w http.ResponseWriter, r *http.Request) {
	resp, err := rt.upstream(r.Context(), http.MethodGet, rt.cfg.Decode[0]+"/v1/models", nil, r.Header)
	if err != nil {
		rt.unavailable(w, err)
		return
	}
	defer func() { _ = resp.Body.Close() }() // copied through; the close has nothing to add
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

// unavailable answers like the real router when no worker could take the request.
func (rt *Router) unavailable(w http.ResponseWriter, err error) {
	rt.out.logf("ERROR", "sglang_router_rs::routers::pd_router", "Worker request failed: %v", err)
	writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": map[string]any{
		"type": "Service Unavailable", "code": "server_selection_failed",
		"message": fmt.Sprintf("No available servers: worker request failed: %v", err),
	}})
}

func (rt *Router) upstream(ctx context.Context, method, url string, body []byte, hdr http.Header) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("build upstream request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	for _, h := range []string{"X-Request-Id", simTagHeader} {
		if v := hdr.Get(h); v != "" {
			req.Header.Set(h, v)
		}
	}
	resp, err := rt.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, url, err)
	}
	return resp, nil
}

// handleChat is the PD dispatch of one chat completion.
func (rt *Router) handleChat(w http.ResponseWriter, r *http.Request) {
	// Only the top level is decoded: the router adds three fields and passes the rest
	// through untouched, which keeps it cheap at hundreds of requests per second.
	var body map[string]json.RawMessage
	if err := json.NewDecoder(io.LimitReader(r.Body, maxBodyBytes)).Decode(&body); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{"type": "Bad Request", "message": err.Error()}})
		return
	}
	_, _ = io.Copy(io.Discard, r.Body)
	// Both routers re-serialise a chat request from a typed struct that has no "rid"
	// (sgl-router openai_api_types.rs@1d265cf8 ChatCompletionRequest; the gateway:
	// smg-project/smg#1874, fix open as sgl-project/sglang#36221), so the engines
	// mint their own rids; "user" survives.
	delete(body, "rid")
	n := rt.next.Add(1)
	p := rt.cfg.Prefill[int(n%uint64(len(rt.cfg.Prefill)))]
	decodeURL := rt.cfg.Decode[int(n%uint64(len(rt.cfg.Decode)))]
	host, _ := json.Marshal(p.BootstrapHost)
	body["bootstrap_host"] = host
	body["bootstrap_port"] = json.RawMessage(strconv.Itoa(p.BootstrapPort))
	body["bootstrap_room"] = json.RawMessage(strconv.FormatUint(rand.Uint64()>>1, 10))
	payload, err := json.Marshal(body)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]any{"error": map[string]any{"message": err.Error()}})
		return
	}

	// The prefill leg must outlive a successful response (prefill only answers once
	// decode acknowledged the KV), but must die with the client.
	pctx, pcancel := context.WithCancel(context.WithoutCancel(r.Context()))
	prefillDone := make(chan struct{})
	go func() {
		defer close(prefillDone)
		if resp, err := rt.upstream(pctx, http.MethodPost, p.URL+"/v1/chat/completions", payload, r.Header); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
	}()

	resp, err := rt.upstream(r.Context(), http.MethodPost, decodeURL+"/v1/chat/completions", payload, r.Header)
	if err != nil {
		pcancel()
		if r.Context().Err() == nil {
			rt.unavailable(w, err)
		}
		return
	}
	defer func() { _ = resp.Body.Close() }() // copied through; the close has nothing to add
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		w.Header().Set("Content-Type", ct)
	}
	w.WriteHeader(resp.StatusCode)
	if err := copyFlushing(w, resp.Body); err != nil || resp.StatusCode != http.StatusOK {
		pcancel()
		return
	}
	go func() {
		select {
		case <-prefillDone:
		case <-time.After(30 * time.Second):
		}
		pcancel()
	}()
}

// copyBufs recycles relay buffers; a fresh one per request showed in profiles.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 16<<10); return &b }}

// copyFlushing relays a (possibly streaming) body, flushing after every read so SSE
// events reach the client as decode produces them.
func copyFlushing(w http.ResponseWriter, r io.Reader) error {
	f, _ := w.(http.Flusher)
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	buf := *bp
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return werr
			}
			if f != nil {
				f.Flush()
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func (rt *Router) handleFault(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<16))
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": err.Error()})
		return
	}
	f, err := ParseFault(body)
	if err == nil {
		err = f.checkRole("router")
	}
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "fault": f.Name})
	if fl, ok := w.(http.Flusher); ok {
		fl.Flush()
	}
	go rt.apply(f)
}

// apply carries out a router fault. router-down ends the process with a non-zero
// status, as a crashed router would; its port then refuses connections.
func (rt *Router) apply(f Fault) {
	switch f.Name {
	case FaultRouterDown, FaultCrash:
		rt.out.logf("ERROR", "sglang_router_rs::server", "Router terminated unexpectedly: simulated %s", f.Name)
		rt.diag.Warn("fault: exiting", "fault", f.Name, "code", f.ExitCode)
		rt.exit(f.ExitCode)
	}
}
