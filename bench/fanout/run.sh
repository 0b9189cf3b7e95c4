#!/usr/bin/env bash
# Fan-out benchmark on systemd test hosts: the same five audit commands on N
# hosts (default 20), run by runbot (one runbook, one step per command, every
# host a target), by parallel-ssh and by Ansible ad-hoc, in one run.
# Needs root (test hosts) and the Debian packages pssh and ansible.
#
#   sudo bench/fanout/run.sh            # N=20, 3 repetitions
#   N=5 REPS=1 bench/fanout/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${N:-20}
REPS=${REPS:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for pkg in pssh ansible; do
    dpkg -s "$pkg" >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$pkg" >/dev/null; }
done
bash test/testhost/up.sh "$N" >/dev/null
# shellcheck disable=SC1091
source /run/runbot-e2e/env
go build -o "$work/runbot" ./cmd/runbot

# The five commands an auditor runs on every host.
cmds=(
    "systemctl is-active sglang-dsv4-prefill sglang-dsv4-decode sglang-dsv4-router"
    "journalctl -u sglang-dsv4-decode -n 200 --no-pager -q | grep -c 'Decode batch' || true"
    "cat /proc/loadavg"
    "tr '\\0' ' ' < /proc/\$(systemctl show -p MainPID --value sglang-dsv4-decode)/cmdline | grep -c -- --disable-overlap-schedule || true"
    "grep -- --disaggregation-transfer-backend /root/serve_dsv4_decode.sh"
)

# runbot: one deployment whose roles are the N hosts; the runbook's five
# steps each target all of them.
hosts=$(awk '{print $1}' "$RUNBOT_TESTHOST_RUN/hosts.tsv" | head -n "$N")
{
    sed -n '/^hosts:/,/^deployments:/p' "$RUNBOT_TESTHOST_INVENTORY" | sed '$d'
    echo "deployments:"
    echo "  fleet:"
    echo "    roles:"
    for h in $hosts; do echo "      $h: {host: $h}"; done
} > "$work/inventory.yaml"
targets=$(echo "$hosts" | paste -sd, -)
{
    echo "name: fleet-audit"
    echo "params: {deployment: {type: deployment, required: true}}"
    echo "steps:"
    i=0
    for c in "${cmds[@]}"; do
        i=$((i + 1))
        printf '  - {id: c%d, check: command, target: [%s], with: {cmd: %s}}\n' "$i" "$targets" "$(printf '%s' "$c" | python3 -c 'import json,sys; print(json.dumps(sys.stdin.read()))')"
    done
} > "$work/fleet-audit.yaml"
"$work/runbot" lint "$work/fleet-audit.yaml" >/dev/null

# Ansible and parallel-ssh read the same hosts, key and known_hosts.
awk -v key="$RUNBOT_TESTHOST_KEY" -v kh="$RUNBOT_TESTHOST_KNOWN_HOSTS" '{printf "%s ansible_host=%s ansible_user=root ansible_ssh_private_key_file=%s ansible_ssh_common_args=\"-o UserKnownHostsFile=%s -o StrictHostKeyChecking=yes\"\n", $1, $2, key, kh}' \
    <(head -n "$N" "$RUNBOT_TESTHOST_RUN/hosts.tsv") > "$work/ansible.ini"
awk '{print "root@" $2}' <(head -n "$N" "$RUNBOT_TESTHOST_RUN/hosts.tsv") > "$work/pssh.hosts"

now() { date +%s.%N; }
run_runbot() {
    "$work/runbot" run "$work/fleet-audit.yaml" -i "$work/inventory.yaml" -p deployment=fleet --store "$work/rb.db" --format json > "$work/runbot.out"
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); bad=[s for s in d["steps"] if s["status"]!="ok"]; sys.exit(1 if bad else 0)' "$work/runbot.out"
}
run_pssh() {
    for c in "${cmds[@]}"; do
        parallel-ssh -h "$work/pssh.hosts" -p "$N" -t 60 -x "-i $RUNBOT_TESTHOST_KEY -o UserKnownHostsFile=$RUNBOT_TESTHOST_KNOWN_HOSTS -o StrictHostKeyChecking=yes" -i "$c" > /dev/null
    done
}
run_ansible() {
    for c in "${cmds[@]}"; do
        # The test hosts have no Python, so Ansible runs the raw module (no
        # module shipping: the cheapest Ansible can be).
        ANSIBLE_HOST_KEY_CHECKING=True ansible all -i "$work/ansible.ini" -f "$N" -m raw -a "$c" > /dev/null
    done
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

declare -A result
for tool in runbot pssh ansible; do
    times=()
    for ((r = 1; r <= REPS; r++)); do
        t0=$(now)
        "run_$tool"
        t1=$(now)
        times+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", b-a}')")
    done
    result[$tool]=$(printf '%s\n' "${times[@]}" | median)
    echo "$tool: ${times[*]} s (median ${result[$tool]} s)"
done
awk -v r="${result[runbot]}" -v p="${result[pssh]}" -v a="${result[ansible]}" -v n="$N" 'BEGIN {
    printf "\n| N hosts | runbot | parallel-ssh | ansible ad-hoc | pssh ÷ runbot | ansible ÷ runbot |\n|---:|---:|---:|---:|---:|---:|\n"
    printf "| %d | %.2f s | %.2f s | %.2f s | %.1f× | %.1f× |\n", n, r, p, a, p/r, a/r }'
