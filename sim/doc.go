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
//	sglang-sim up     --dir DIR [--scenario NAME] [--name sim] [--profile 2026-mid] [--token-rate 40]
//	                  [--decode-log-interval 40] [--idle-refresh 30s] [--log-format ERA] [--wedge-burst 8]
//	                  [--health-timeout D] [--restart no|on-failure] [--transfer-backend nixl|mooncake]
//	                  [--metrics on|off] [--request-ids engine|client] [--abort-latency MIN-MAX]
//	                  [--log-tz ZONE] [--overlap on|flag|config|forced] [--engine-arg ARG]... [--router-arg ARG]...
//	sglang-sim ctl    --dir DIR start|stop|restart prefill|decode|router|all   [--timeout 15s]
//	sglang-sim ctl    --dir DIR show ROLE       (systemctl show style: ActiveState=, SubState=, MainPID=, ...)
//	sglang-sim ctl    --dir DIR status
//	sglang-sim ctl    --dir DIR fault pd-wedge|decode-crash|router-down|slow|stale-sample|prefill-stall|
//	                  decode-hang|slow-decode|clear [--itl D]
//	                  [--count N] [--synthetic] [--ttft D] [--scrapes N] [--value V] [--exit-code N]
//	sglang-sim down   --dir DIR
//
// Engines accept sglang.launch_server's flags in both "--flag value" and
// "--flag=value" forms and warn about (then ignore) the ones they do not model, so a
// real serve script runs with only its interpreter line changed
// ("python3 -m sglang.launch_server" becomes "sglang-sim engine"). "--config FILE.yaml"
// is merged the way SGLang merges it (the file's "flag-name: value" pairs first, the
// command line wins), and "--speculative-algorithm EAGLE" turns the overlap schedule
// off as SGLang does. Simulator knobs are --sim-profile NAME, --sim-token-rate,
// --sim-prefill-rate, --sim-idle-refresh, --sim-log-format (2025-mid, 2025-late,
// 2026-mid, 2026-late: overrides the profile's era), --sim-wedge-burst,
// --sim-wedge-window, --sim-default-max-tokens, --sim-kv-bytes-per-token,
// --sim-max-total-tokens, --sim-request-ids engine|client, --sim-abort-latency
// MIN-MAX and --sim-fault NAME (repeatable, applied once ready). The router takes
// --sim-profile NAME and the real --health-check-interval-secs,
// --health-check-timeout-secs, --health-failure-threshold, --health-success-threshold,
// --health-check-endpoint, --worker-startup-check-interval and --disable-health-check.
// The SGLang environment variables SGLANG_DISAGGREGATION_NIXL_BACKEND,
// SGLANG_HEALTH_CHECK_TIMEOUT, SGLANG_DISAGGREGATION_WAITING_TIMEOUT,
// SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT, SGLANG_LOG_FORWARD_ITERS, SGLANG_LOG_MS and
// SGLANG_ENABLE_SPEC_V2 are honoured, and TZ sets the zone of the log lines.
//
// SGLang-format lines go to stdout, one write per line, stamped in the process's
// local time as Python's logging does (TZ, else the machine's zone; milliseconds only
// with SGLANG_LOG_MS on builds that read it); the simulator's own diagnostics
// (log/slog) go to stderr. `up` sends them to DIR/<role>.log and DIR/<role>.sim.log
// respectively.
//
// # Build profiles
//
// `up --profile NAME` impersonates one SGLang build (profile.go has the table of
// choices with their sources):
//
//	2025-mid   "Prefill batch." lines; Rust sgl-router whose /health is 200 "All servers
//	           healthy" only while every worker passes its background check, else 503
//	           "Unhealthy servers: [...]"; /get_server_info only;
//	           sglang:num_prefill_infight_queue_reqs (sic); engine_type="unified";
//	           no realtime token counter; PD queue gauges not refreshed at idle.
//	2025-late  v0.5.8-style lines; sgl-router; /server_info plus the deprecated
//	           /get_server_info (which logs a warning); no realtime token counter.
//	2026-mid   the incident's build (default): ~May 2026 lines; the model gateway, whose
//	           /health answers 200 "OK" whatever its workers do;
//	           sglang:realtime_tokens_total{mode=...} live.
//	2026-late  newest lines (#bootstrap-req); gateway; num_prefill_bootstrap_queue_reqs.
//
// The knobs vary what differs within a build, each defaulting to real SGLang:
//
//	--transfer-backend nixl|mooncake  nixl (the incident's). NIXL failure lines end
//	                                  "with exception NIXL KVReceiver Exception" (decode),
//	                                  "… NIXL KVSender Exception" (prefill): no "Aborted";
//	                                  mooncake's end "KVTransferError(bootstrap_room=R):
//	                                  Aborted by AbortReq.".
//	--metrics on|off                  on (the serve scripts pass --enable-metrics); off:
//	                                  /metrics answers 404 {"detail":"Not Found"}.
//	--request-ids engine|client       engine: every engine mints its own rid, ignores
//	                                  X-Request-Id and honours only a body "rid" (which
//	                                  both routers drop from chat requests); client:
//	                                  X-Request-Id is the rid.
//	--abort-latency MIN-MAX           how long after a client disconnects the engines
//	                                  process the abort: 2s-4s behind sgl-router, 4s-8s
//	                                  behind the gateway. Requests that arrived and left
//	                                  together are aborted together.
//	--log-tz ZONE                     exported as TZ to the engines (default: local zone).
//	--overlap on|flag|config|forced   on (SGLang's default); flag: --disable-overlap-schedule;
//	                                  config: "disable-overlap-schedule: true" in
//	                                  DIR/<role>-config.yaml passed with --config; forced:
//	                                  --speculative-algorithm EAGLE, which SGLang answers
//	                                  by turning overlap off. The effective value is in
//	                                  server_args=ServerArgs(…), /server_info, and is what
//	                                  the wedge model uses.
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
// both legs; each engine treats that as AbortReq, after --abort-latency, and logs the
// transfer failure with its rid: one the engine minted (real SGLang), or with
// --request-ids client the client's (X-Request-Id header, else the body's "rid", else
// "user").
//
// Gauges behave like SGLang's (reference §3.1): they are written only at a prefill
// batch, a decode log interval or an idle refresh (--sim-idle-refresh), and decode's
// idle refresh returns early while any request waits in its queues, so a stuck
// decode's gauges freeze. sglang:generation_tokens_total and prompt_tokens_total are
// the tokenizer's: they move once per finished request, by its token counts, so a
// decode streaming long answers shows them flat; the live per-iteration counter is
// sglang:realtime_tokens_total{mode="decode"} (mode="prefill_compute" on prefill), on
// the builds that have it.
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
//	{"fault": "decode-hang"}                   decode: the scheduler event loop blocks (not lifted by clear)
//	{"fault": "slow-decode", "itl": "1s"}      decode: every decode iteration takes itl; batches continue
//	{"fault": "clear"}                         any process: remove injected faults
//
// and answers {"ok": true, "fault": NAME, "state": {...}} or {"error": "..."} with
// HTTP 400 (bad body, wrong role). GET /_sim/state returns the simulator's ground
// truth (e.g. {"role":"decode","wedged":true,...}); it is for tests, never for checks
// that claim to work on real SGLang. Decode's state lists the rids waiting in each
// queue and, for requests that carried the simulator-only X-Sim-Tag header (which the
// router forwards and which never becomes a rid), their tags (prealloc_tags,
// transfer_tags). Neither endpoint produces access-log lines.
//
// # Faults and causality
//
// pd-wedge does not wedge anything by itself: it aborts N in-flight transfers at once
// through the same path a client timeout takes. `ctl fault pd-wedge` does it with real
// requests: it stalls prefill, sends N chat completions through the router (tagged
// pd-wedge-burst-1..N with the simulator-only X-Sim-Tag header, which /_sim/state
// reports next to the rids; also sent as X-Request-Id, the rid with --request-ids
// client), waits until all N sit in decode's transfer queue, cancels the
// N clients at the same instant and lifts the stall (a prefill "clear", which also
// lifts a slow fault). `ctl fault pd-wedge --synthetic`, like POST /_sim/fault on
// decode, aborts N synthetic transfers inside decode instead. The causal model (wedge.go) then
// decides: with the overlap schedule on (the default), --sim-wedge-burst aborts within
// --sim-wedge-window wedge the decode scheduler, which stops issuing batches and stops
// completing transfers while /health stays 200 and aborts are still logged, one per
// client timeout, each with its own room; prefill keeps prefilling and parks each
// request as "#inflight-req: 1". With --disable-overlap-schedule the same burst is
// harmless, as it is when a --config file or speculative decoding turned overlap off:
// the model uses the effective setting. A wedge is not an injected fault, so "clear"
// does not lift it: restarting
// decode (and prefill) does. Real client timeouts can wedge decode the same way.
//
// decode-hang is the other hang class (upstream PRs #28039 and #31072): the decode
// scheduler's event loop itself blocks. That loop reads requests and aborts,
// pre-allocates KV and hand-shakes with prefill, polls transfers, runs batches and
// serves the health request, so decode logs nothing at all (no batch, no abort
// line), prefill keeps new requests in its bootstrap queue (no prefill batch for
// them; requests already handed over stay in flight), decode's /health and
// /health_generate answer 503 after SGLANG_HEALTH_CHECK_TIMEOUT with "Health check
// failed", /server_info hangs (a scheduler round-trip) and /metrics answers with
// frozen gauges. Every scheduler runs SGLang's watchdog (--watchdog-timeout, 300 s):
// if a batch was in flight when the loop blocked, forward_ct stops and the watchdog
// logs "Watchdog timeout" (2025 wording) or "Scheduler watchdog timeout (…)" (2026)
// on every rank, and 5 s later the process tree is SIGKILLed (the unit fails with
// Result=signal). A loop that blocked while idle has no batch to watch and never
// reads the health request, so that decode stays up, answering 503, until restarted.
// The same watchdog kills a prefill stuck in prefill-stall after --watchdog-timeout.
// slow-decode makes every decode iteration take --itl (time to first token is
// unchanged, gen throughput drops); clear lifts it, but not decode-hang.
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
