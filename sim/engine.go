package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"time"
)

// scheduler is the mode-specific half of an engine: the prefill or decode event loop
// with its queues.
type scheduler interface {
	run(ctx context.Context)
	serveChat(w http.ResponseWriter, r *http.Request, c *chatRequest, rid string)
	applyFault(f Fault) error
	// healthStuck reports whether a health generation would get no output now.
	healthStuck() bool
	// roundTrip waits until the scheduler's event loop could answer a request
	// (get_internal_state), i.e. for as long as the loop is blocked or ctx lives.
	roundTrip(ctx context.Context) error
	state() map[string]any
	close()
}

// Engine is one simulated sglang.launch_server process in PD mode.
type Engine struct {
	cfg     EngineConfig
	log     *Logger
	diag    *slog.Logger
	metrics *engineMetrics
	sched   scheduler
	ready   atomic.Bool
	// lastOutput is when the engine last produced output for any request (unix ns),
	// the heartbeat /health_generate waits on.
	lastOutput atomic.Int64
	healthWait time.Duration
	showIters  bool
	// exit ends the process; crash faults call it.
	exit func(code int)
	// tags are the simulator-only X-Sim-Tag marks of requests, for /_sim/state.
	tags ridTags
}

// RunEngine runs an engine until ctx is cancelled (SIGTERM) or a crash fault ends
// the process. SGLang-format lines go to stdout, simulator diagnostics to stderr.
func RunEngine(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	diag := slog.New(slog.NewTextHandler(stderr, nil)).With("component", "sglang-sim engine")
	cfg, err := ParseEngineArgs(args, diag)
	if err != nil {
		return err
	}
	e := &Engine{
		cfg: cfg, log: newEngineLogger(stdout, cfg), diag: diag, metrics: newEngineMetrics(cfg),
		healthWait: envDuration("SGLANG_HEALTH_CHECK_TIMEOUT", 20*time.Second),
		showIters:  os.Getenv("SGLANG_LOG_FORWARD_ITERS") != "",
		exit:       os.Exit,
	}
	e.lastOutput.Store(time.Now().UnixNano())
	return e.serve(ctx)
}

func (e *Engine) serve(ctx context.Context) error {
	c := e.cfg
	for _, note := range c.Notes {
		e.log.Logf("", "%s", note)
	}
	e.log.Logf("", "%s", c.ServerArgsDump())
	addr := net.JoinHostPort(c.Host, strconv.Itoa(c.Port))
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		e.log.Logf("", "ERROR:    [Errno 98] error while attempting to bind on address (%s, %d): address already in use", pyStr(c.Host), c.Port)
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	defer func() { _ = ln.Close() }() // the server may have closed it already
	switch c.Mode {
	case "prefill":
		bln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", net.JoinHostPort(c.Host, strconv.Itoa(c.BootstrapPort)))
		if err != nil {
			return fmt.Errorf("listen on bootstrap port %d: %w", c.BootstrapPort, err)
		}
		e.sched = newPrefillSched(e, bln)
	default:
		e.sched = newDecodeSched(e)
	}
	defer e.sched.close()
	e.logBackendInit()

	schedCtx, stopSched := context.WithCancel(context.Background())
	defer stopSched()
	go e.sched.run(schedCtx)

	pid := os.Getpid()
	e.log.Logf("", "INFO:     Started server process [%d]", pid)
	e.log.Logf("", "INFO:     Waiting for application startup.")
	e.log.Logf("", "INFO:     Application startup complete.")
	e.log.Logf("", "INFO:     Uvicorn running on http://%s:%d (Press CTRL+C to quit)", c.Host, c.Port)
	srv := &http.Server{Handler: e.routes(), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	e.warmUp(ctx, net.JoinHostPort(loopbackFor(c.Host), strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)))
	e.ready.Store(true)
	e.log.Logf("", "The server is fired up and ready to roll!")
	for _, name := range c.Sim.Faults {
		f, _ := ParseFault([]byte(`{"fault":` + strconv.Quote(name) + `}`))
		if err := e.sched.applyFault(f); err != nil {
			e.diag.Warn("start fault not applied", "fault", name, "err", err)
		}
	}

	select {
	case <-ctx.Done():
	case err := <-served:
		return fmt.Errorf("http server: %w", err)
	}
	e.ready.Store(false)
	e.log.Logf("", "INFO:     Shutting down")
	// Hung requests (a wedged decode) would hold a graceful shutdown forever; like
	// uvicorn after its grace period, the rest are cut off.
	shutCtx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil {
		_ = srv.Close()
	}
	e.log.Logf("", "INFO:     Waiting for application shutdown.")
	e.log.Logf("", "INFO:     Application shutdown complete.")
	e.log.Logf("", "INFO:     Finished server process [%d]", pid)
	return nil
}

// logBackendInit prints the startup lines that reveal the transfer backend, once per
// TP rank, as each rank's KV manager logs its own.
func (e *Engine) logBackendInit() {
	t := e.cfg.Topology
	ranks := make([]string, 0, t.TPSize)
	for tp := 0; tp < t.TPSize; tp++ {
		dp := 0
		if t.DPAttention && t.DPSize > 1 {
			dp = tp / t.attnTP()
		}
		ranks = append(ranks, t.Prefix(dp, tp))
	}
	switch e.cfg.TransferBackend {
	case "nixl":
		backend := os.Getenv("SGLANG_DISAGGREGATION_NIXL_BACKEND")
		if backend == "" {
			backend = "UCX"
		}
		e.log.Raw(fmt.Sprintf("%s NIXL INFO    _api.py:361 Backend %s was instantiated", e.log.RawStamp(), backend))
		for _, r := range ranks {
			e.log.Logf(r, "NIXL KVManager initialized with backend: %s", backend)
		}
	default:
		for _, r := range ranks {
			e.log.Logf(r, "%s KVManager initialized with transfer backend: %s", e.cfg.Mode, e.cfg.TransferBackend)
		}
	}
}

// warmUp does what SGLang's launcher does once uvicorn listens: it asks its own
// server for /model_info and, on prefill, runs the PD warm-up request.
func (e *Engine) warmUp(ctx context.Context, addr string) {
	client := &http.Client{Timeout: 2 * time.Second}
	if resp, err := get(ctx, client, "http://"+addr+"/model_info"); err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	} else {
		e.diag.Warn("warm-up request failed", "err", err)
	}
	if e.cfg.Mode == "prefill" {
		e.log.Logf("", "End of prefill disaggregation mode warmup with status 200, resp: [{'text': '', 'meta_info': {'id': %s, 'finish_reason': {'type': 'length', 'length': 0}, 'prompt_tokens': 4, 'completion_tokens': 1}}]", pyStr(newRID()))
	}
}

// noteOutput records that some request produced output, the heartbeat behind
// /health_generate.
func (e *Engine) noteOutput() { e.lastOutput.Store(time.Now().UnixNano()) }

// crash ends the process the way a dying SGLang launcher does: one line, no
// traceback, a non-zero status.
func (e *Engine) crash(code int) {
	e.log.Logf("", "Received sigquit from a child process. It usually means the child failed.")
	e.diag.Warn("crash fault: exiting", "code", code)
	e.exit(code)
}

var errNotReady = errors.New("server is not ready")

// loopbackFor returns an address the engine can reach itself on when it listens on host.
func loopbackFor(host string) string {
	switch host {
	case "", "0.0.0.0":
		return "127.0.0.1"
	case "::", "[::]":
		return "::1"
	}
	return host
}
