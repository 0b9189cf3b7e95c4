#!/usr/bin/env bash
# bench/storm/run.sh — alert storm benchmark: how long a storm of distinct
# alerts takes to be diagnosed in Slack. For each scenario (groups: 1,000
# alerts in 50 Alertmanager groups of 20; single: 200 alerts, one per
# notification) and each fake-Slack mode (permissive: every call accepted
# at once; limits: Slack's documented limits, chat.postMessage about
# 1/s per channel with a burst of 3 and chat.update about 50/min for the
# workspace with a burst of 5, a 429 with Retry-After beyond them), it
# wires a fresh runbot the way `runbot serve` does, with serve's defaults
# (parallel 4, 1 s between updates of a message) except alerts.max_queue,
# raised to 1,024 so that every alert is accepted at once, and a fresh
# SQLite store. It POSTs the notifications from a few concurrent senders
# (a 503 is delivered again after its Retry-After) and reports, per
# alert, the time from its delivery to its run queued, to its run started
# and to its verdict visible in Slack (p50/p99/max), the messages,
# replies, updates and 429s Slack saw, verdicts never shown, runs started
# and wall time, as a markdown table. Each scenario in each mode ends when
# every run finished and Slack was quiet for 10 s, or at -timeout (20 min
# by default), reporting what stood then. All of it runs in one process;
# the limits runs take many minutes.
#
#   bench/storm/run.sh
#   bench/storm/run.sh -scenarios single -modes limits -timeout 15m
#   bench/storm/run.sh -log /tmp/storm.log   # runbot's own log, for a closer look
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
exec go run ./bench/storm "$@"
