#!/usr/bin/env bash
# recordings.sh: refreshes the recorded test cases of the shipped runbooks
# (runbooks/builtin/testdata/recordings/RUNBOOK/CASE) by running each
# runbook, at its production defaults, with `runbot run --record` against a
# simulated deployment in the state the case names. `make recordings`
# runs it; the expectations in runbooks/builtin/*_test.yaml are written by
# hand and are not touched, so a refreshed recording that no longer gives
# its case's verdict fails `make test`.
#
# Usage: scripts/recordings.sh [CASE...]   (CASE as RUNBOOK/NAME; default all)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
bin=${BIN:-$root/bin}
out=$root/runbooks/builtin/testdata/recordings
# A fixed place for the deployments, so that the paths recorded in
# command lines (scripts, logs) stay the same from one refresh to the next.
work=${RECORDINGS_WORK:-/tmp/runbot-recordings}

# RUNBOOK/NAME|sglang-sim ctl fault args (empty: none)|runbot params|sglang-sim up args
# The up arguments pick a profile of a real SGLang build or a knob that
# varies within one (see sim/FIDELITY.md), so that each build's own log
# lines, metrics and endpoints are recorded.
# host-basics reads this machine itself: it goes first, before the
# simulated deployments add to the load it measures.
cases=(
  "host-basics/host-ok||host=local"
  "host-basics/disk-threshold||host=local disk_full_pct=1"
  "sglang-pd-wedge/healthy||deployment=sim"
  "sglang-pd-wedge/pd-wedge|pd-wedge|deployment=sim"
  "sglang-pd-wedge/decode-crash|decode-crash|deployment=sim"
  "sglang-pd-wedge/router-down|router-down|deployment=sim"
  "sglang-pd-wedge/slow|slow --ttft 10s|deployment=sim"
  "sglang-pd-wedge/prefill-stall|prefill-stall|deployment=sim"
  "sglang-pd-wedge/decode-hang|decode-hang|deployment=sim"
  "sglang-pd-wedge/slow-decode|slow-decode --itl 1s|deployment=sim"
  "sglang-pd-wedge/2025-mid-pd-wedge|pd-wedge|deployment=sim|--profile 2025-mid"
  "sglang-pd-wedge/2025-mid-decode-hang|decode-hang|deployment=sim|--profile 2025-mid"
  "sglang-pd-wedge/2025-late-pd-wedge|pd-wedge|deployment=sim|--profile 2025-late"
  "sglang-pd-wedge/2025-late-decode-hang|decode-hang|deployment=sim|--profile 2025-late"
  "sglang-pd-wedge/2026-late-pd-wedge|pd-wedge|deployment=sim|--profile 2026-late"
  "sglang-pd-wedge/2026-late-decode-hang|decode-hang|deployment=sim|--profile 2026-late"
  "sglang-pd-wedge/metrics-off-pd-wedge|pd-wedge|deployment=sim|--metrics off"
  "sglang-pd-wedge/mooncake-pd-wedge|pd-wedge|deployment=sim|--transfer-backend mooncake"
  "sglang-pd-wedge/overlap-config-pd-wedge|pd-wedge|deployment=sim|--overlap config"
  "sglang-pd-wedge/overlap-forced-decode-hang|decode-hang|deployment=sim|--overlap forced"
  "sglang-pd-audit/healthy||deployment=sim"
  "sglang-pd-audit/pd-wedge|pd-wedge|deployment=sim"
)

want=("$@")
selected() {
  [ ${#want[@]} -eq 0 ] && return 0
  local c
  for c in "${want[@]}"; do [ "$c" = "$1" ] && return 0; done
  return 1
}

for spec in "${cases[@]}"; do
  IFS='|' read -r name fault params upargs <<<"$spec"
  selected "$name" || continue
  runbook=${name%%/*}
  dep=$work/${name//\//-}
  "$bin/sglang-sim" down --dir "$dep" >/dev/null 2>&1 || true
  rm -rf "$dep" "$out/$name"
  mkdir -p "$(dirname "$out/$name")"
  # shellcheck disable=SC2086 # the up arguments are words
  "$bin/sglang-sim" up --dir "$dep" $upargs >/dev/null
  trap '"$bin/sglang-sim" down --dir "$dep" >/dev/null 2>&1 || true' EXIT
  if [ -n "$fault" ]; then
    # shellcheck disable=SC2086 # the fault's arguments are words
    "$bin/sglang-sim" ctl --dir "$dep" fault $fault >/dev/null
  fi
  args=()
  for p in $params; do args+=(-p "$p"); done
  echo "recording $name"
  # Exit 2 (critical) and 3 (inconclusive) are verdicts, not failures.
  code=0
  "$bin/runbot" run "$runbook" -i "$dep/inventory.yaml" "${args[@]}" \
    --store "$dep/runbot.db" --record "$out/$name" --format json >"$dep/report.json" || code=$?
  if [ "$code" -ne 0 ] && [ "$code" -ne 2 ] && [ "$code" -ne 3 ]; then
    echo "runbot run $runbook failed with exit $code" >&2
    exit 1
  fi
  "$bin/sglang-sim" down --dir "$dep" >/dev/null
  trap - EXIT
done
