// Package sim is sglang-sim: a faithful, fault-injectable simulation of an SGLang
// prefill/decode (PD) deployment, used as test, demo and benchmark equipment for
// runbot. It looks like SGLang from the outside (launch flags, HTTP endpoints,
// Prometheus metrics, log lines) and its faults behave causally, so diagnoses and
// remediations are exercised against something that really fails and really
// recovers. It is not a mock of runbot's own code.
//
// # Processes
//
// One binary, cmd/sglang-sim, runs every role as a separate process:
//
//	sglang-sim engine --disaggregation-mode prefill|decode [sglang.launch_server flags]
//	sglang-sim router --pd-disaggregation --prefill URL [BOOTSTRAP_PORT] --decode URL --host H --port P
//	sglang-sim load   --rate R --duration D --timeout T [--stream] [--id-prefix P] URL
//	sglang-sim up     --dir DIR [--scenario NAME] [--name sim] [--token-rate 40] [--decode-log-interval 40]
//	                  [--idle-refresh 30s] [--log-format ERA] [--wedge-burst 8] [--health-timeout D]
//	                  [--restart no|on-failure] [--engine-arg ARG]...
//	sglang-sim ctl    --dir DIR start|stop|restart prefill|decode|router|all   [--timeout 15s]
//	sglang-sim ctl    --dir DIR show ROLE       (systemctl show style: ActiveState=, SubState=, MainPID=, ...)
//	sglang-sim ctl    --dir DIR status
//	sglang-sim ctl    --dir DIR fault pd-wedge|decode-crash|router-down|slow|stale-sample|prefill-stall|clear
//	                  [--count N] [--synthetic] [--ttft D] [--scrapes N] [--value V] [--exit-code N]
//	sglang-sim down   --dir DIR
//
// Engines accept sglang.launch_server's flags in both "--flag value" and
// "--flag=value" forms and warn about (then ignore) the ones they do not model, so a
// real serve script runs with only its interpreter line changed
// ("python3 -m sglang.launch_server" becomes "sglang-sim engine"). Simulator knobs are
// --sim-token-rate, --sim-prefill-rate, --sim-idle-refresh, --sim-log-format
// (2025-mid, 2025-late, 2026-mid, 2026-late), --sim-wedge-burst, --sim-wedge-window,
// --sim-default-max-tokens, --sim-kv-bytes-per-token, --sim-max-total-tokens and
// --sim-fault NAME (repeatable, applied once ready). The SGLang environment variables
// SGLANG_DISAGGREGATION_NIXL_BACKEND, SGLANG_HEALTH_CHECK_TIMEOUT,
// SGLANG_DISAGGREGATION_WAITING_TIMEOUT, SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT and
// SGLANG_LOG_FORWARD_ITERS are honoured.
//
// SGLang-format lines go to stdout, one write per line, UTC timestamps; the
// simulator's own diagnostics (log/slog) go to stderr. `up` sends them to
// DIR/<role>.log and DIR/<role>.sim.log respectively.
//
// # Request flow
//
// The router assigns a random 63-bit bootstrap_room and sends the request to prefill
// and decode concurrently. Decode reserves KV and hand-shakes with prefill's bootstrap
// port (a persistent TCP session carrying PREALLOC/DONE/ABORT and KV frames); prefill
// runs a batch ("Prefill batch" line), moves the request to its inflight queue and
// really sends the KV bytes; decode's scheduler polls the arrived KV, acknowledges it,
// and runs one decode iteration per token interval, printing "Decode batch" every
// --decode-log-interval iterations. A client that disconnects makes the router drop
// both legs; each engine treats that as AbortReq and logs the transfer failure with the
// client's request id (X-Request-Id header, else the body's "rid", else "user") as rid.
//
// Gauges behave like SGLang's (reference §3.1): they are written only at a prefill
// batch, a decode log interval or an idle refresh (--sim-idle-refresh), and decode's
// idle refresh returns early while any request waits in its queues, so a stuck
// decode's gauges freeze.
//
// # Admin API
//
// Every process serves POST /_sim/fault with a JSON body
//
//	{"fault": "pd-wedge", "count": 8}          decode: abort N in-flight transfers at once
//	{"fault": "decode-crash", "exit_code": 1}  decode: exit non-zero (no traceback)
//	{"fault": "crash", "exit_code": 1}         any process: exit non-zero
//	{"fault": "router-down", "exit_code": 1}   router: exit non-zero, port refuses connections
//	{"fault": "slow", "ttft": "5s"}            prefill: every prefill takes ttft longer; batches continue
//	{"fault": "stale-sample", "scrapes": 1, "value": 2}
//	                                           decode: the next scrape shows num_running_reqs=value
//	{"fault": "prefill-stall"}                 prefill: the next forward pass never returns;
//	                                           /health turns 503 after SGLANG_HEALTH_CHECK_TIMEOUT
//	{"fault": "clear"}                         any process: remove injected faults
//
// and answers {"ok": true, "fault": NAME, "state": {...}} or {"error": "..."} with
// HTTP 400 (bad body, wrong role). GET /_sim/state returns the simulator's ground
// truth (e.g. {"role":"decode","wedged":true,...}); it is for tests, never for checks
// that claim to work on real SGLang. Neither endpoint produces access-log lines.
//
// # Faults and causality
//
// pd-wedge does not wedge anything by itself: it aborts N in-flight transfers at once
// through the same path a client timeout takes. `ctl fault pd-wedge` does it with real
// requests: it stalls prefill, sends N chat completions through the router (rids
// pd-wedge-burst-1..N), waits until all N sit in decode's transfer queue, cancels the
// N clients at the same instant and lifts the stall (a prefill "clear", which also
// lifts a slow fault). `ctl fault pd-wedge --synthetic`, like POST /_sim/fault on
// decode, aborts N synthetic transfers inside decode instead. The causal model (wedge.go) then
// decides: with the overlap schedule on (the default), --sim-wedge-burst aborts within
// --sim-wedge-window wedge the decode scheduler, which stops issuing batches and stops
// completing transfers while /health stays 200 and aborts are still logged, one per
// client timeout, each with its own room; prefill keeps prefilling and parks each
// request as "#inflight-req: 1". With --disable-overlap-schedule the same burst is
// harmless. A wedge is not an injected fault, so "clear" does not lift it: restarting
// decode (and prefill) does. Real client timeouts can wedge decode the same way.
//
// # Deployments
//
// `up` picks free ports, writes DIR/serve_{prefill,decode,router}.sh (bash, shaped like
// the fixtures' serve_dsv4_*.sh, ending in exec so MainPID's cmdline has the real
// flags), DIR/sim.json, DIR/endpoints.json and DIR/inventory.yaml (runbot's
// inventory, with `sglang-sim ctl` as the service manager), then starts one detached
// supervisor per role (its own session) that runs the script, records the unit state
// in DIR/<role>.state.json and DIR/<role>.pid, and appends output to the role's log.
// Editing a script and restarting the role changes the running flags.
package sim
