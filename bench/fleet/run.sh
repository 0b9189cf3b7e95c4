#!/usr/bin/env bash
# Fleet benchmark: the sglang-pd-audit runbook on 1 simulated deployment,
# then on N (default 20) in one process (runbot run --all-deployments) and
# in N processes at once (one runbot run per deployment), in one run.
#
#   bench/fleet/run.sh            # N=20, 3 repetitions
#   N=5 REPS=1 bench/fleet/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${N:-20}
REPS=${REPS:-3}
work=$(mktemp -d)
cleanup() {
    for i in $(seq 1 "$N"); do "$work/sglang-sim" down --dir "$work/sim$i" >/dev/null 2>&1 || true; done
    rm -rf "$work"
}
trap cleanup EXIT
go build -o "$work/runbot" ./cmd/runbot
go build -o "$work/sglang-sim" ./cmd/sglang-sim

# N deployments, each its own router, prefill and decode, all at the
# simulator's defaults; one inventory naming them sim1..simN.
for i in $(seq 1 "$N"); do
    "$work/sglang-sim" up --dir "$work/sim$i" --name "sim$i" >/dev/null
done
python3 - "$work" "$N" > "$work/inventory.yaml" <<'PY'
import sys, re
work, n = sys.argv[1], int(sys.argv[2])
hosts, deps = [], []
for i in range(1, n + 1):
    text = open(f"{work}/sim{i}/inventory.yaml").read()
    h, d = text.split("deployments:\n")
    h = h.replace("hosts:\n", "").replace("  local:", f"  local{i}:")
    d = re.sub(r"host: local,", f"host: local{i},", d)
    hosts.append(h.rstrip("\n"))
    deps.append(d.rstrip("\n"))
print("hosts:\n" + "\n".join(hosts) + "\ndeployments:\n" + "\n".join(deps))
PY
"$work/runbot" explain sglang-pd-audit -i "$work/inventory.yaml" -p deployment=sim1 >/dev/null

now() { date +%s.%N; }
run_one() { "$work/runbot" run sglang-pd-audit -i "$work/inventory.yaml" -p deployment=sim1 --store "$work/one.db" --format json >/dev/null; }
run_fleet() { "$work/runbot" run sglang-pd-audit -i "$work/inventory.yaml" --all-deployments --parallel "$N" --store "$work/fleet.db" --format json >/dev/null; }
run_procs() {
    local pids=()
    for i in $(seq 1 "$N"); do
        "$work/runbot" run sglang-pd-audit -i "$work/inventory.yaml" -p "deployment=sim$i" --store "$work/procs.db" --format json >/dev/null &
        pids+=($!)
    done
    local rc=0
    for p in "${pids[@]}"; do wait "$p" || rc=$?; done
    return $rc
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
declare -A result
for tool in one fleet procs; do
    times=()
    for _ in $(seq 1 "$REPS"); do
        t0=$(now)
        "run_$tool"
        t1=$(now)
        times+=("$(echo "$t1 - $t0" | bc -l)")
    done
    result[$tool]=$(printf '%s\n' "${times[@]}" | median)
    printf '%-6s %s\n' "$tool" "${times[*]}" >&2
done
printf '| N | 1 deployment | N in one process | N processes | one process ÷ 1 | N processes ÷ one process |\n'
printf '|---:|---:|---:|---:|---:|---:|\n'
printf '| %d | %.2f s | %.2f s | %.2f s | %.2f× | %.2f× |\n' "$N" "${result[one]}" "${result[fleet]}" "${result[procs]}" \
    "$(echo "${result[fleet]} / ${result[one]}" | bc -l)" "$(echo "${result[procs]} / ${result[fleet]}" | bc -l)"
