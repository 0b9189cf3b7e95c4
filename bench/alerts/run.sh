#!/usr/bin/env bash
# bench/alerts/run.sh — webhook ingestion benchmark: N Alertmanager
# notifications (default 10,000) for D distinct alerts (default 1,000, so
# each alert is delivered N/D times: once new, then as repeats) POSTed over
# loopback by S concurrent senders to runbot's /alerts/alertmanager, with
# the real SQLite store (synchronous=FULL), the real dispatcher running a
# one-command runbook per distinct alert, and the fake Slack of
# slackchat/slackrec. A 503 (queue full) is retried after RETRY_MS, as
# Alertmanager would retry later. Prints accepted/s, ack latency
# percentiles, 503s, runs started (must equal D) and alerts dropped (must
# be 0).
#
#   bench/alerts/run.sh
#   N=2000 D=200 S=4 bench/alerts/run.sh
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
exec go run ./bench/alerts -n "${N:-10000}" -d "${D:-1000}" -s "${S:-8}" \
	-max-queue "${MAX_QUEUE:-256}" -runs "${RUNS:-8}" -retry "${RETRY_MS:-20}ms" \
	-update-interval "${UPDATE:-100ms}" "$@"
