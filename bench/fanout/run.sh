#!/usr/bin/env bash
# Fan-out benchmark on systemd test hosts: the same five audit commands on N
# hosts, for each N in NS (default "20 50"), in one run, by
#
#   runbot-shared  one runbook, one step per command, every host a target,
#                  ssh.shared_session on: one SSH session per host
#   runbot         the same runbook without it: one session per command
#   runbot-native  the audit as a runbot runbook is written, with runbot's
#                  checks for the same facts: unit_state (systemd's D-Bus
#                  API through the connection), log_progress (journalctl),
#                  read_file, flag and grep_config (files over SFTP)
#   runbot-floor-units, runbot-floor-journal (only when named in TOOLS)
#                  runbot-native's first three steps (the connection and the
#                  unit reads), then those and the journal read: what the
#                  audit costs before its file reads
#   ssh-parallel   OpenSSH, one `ssh` per host in parallel (& + wait), the five
#                  commands joined into one line
#   pssh-once      parallel-ssh called once with the joined line
#   ansible-raw    Ansible ad-hoc `-m raw` once with the joined line
#
# The joined line separates each command's output and exit status with echo
# markers, so the peers return what runbot returns; every tool's output is
# checked. All verify host keys strictly against the same known_hosts and log
# in with the same key. The peers get the cheapest key exchange
# (OPENSSH_KEX, default curve25519-sha256, as bench/ssh/run.sh) and no
# connection multiplexing, which a one-shot run cannot use.
# Needs root (test hosts) and the Debian packages pssh and ansible.
#
#   sudo bench/fanout/run.sh                  # N=20 and 50, 5 rounds
#   NS=5 REPS=1 bench/fanout/run.sh
#   RUNBOT_BIN=/path/to/runbot bench/fanout/run.sh   # instead of building ./cmd/runbot
#
# Besides wall time it reports CPU seconds: the client's (the tool and its
# children) and the hosts' (their cgroups' cpuacct, when the machine has it).
set -euo pipefail
cd "$(dirname "$0")/../.."
NS=${NS:-20 50}
REPS=${REPS:-5}
OPENSSH_KEX=${OPENSSH_KEX-curve25519-sha256}
TOOLS=${TOOLS:-runbot-native runbot-shared runbot ssh-parallel pssh-once ansible-raw}
work=$(mktemp -d)
booted=0
cleanup() {
    rm -rf "$work"
    if ((booted)); then bash test/testhost/down.sh >/dev/null 2>&1 || echo "test/testhost/down.sh failed; run it by hand" >&2; fi
}
trap cleanup EXIT

for pkg in pssh ansible; do
    dpkg -s "$pkg" >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$pkg" >/dev/null; }
done
MAXN=0
for n in $NS; do ((n > MAXN)) && MAXN=$n; done
booted=1
bash test/testhost/up.sh "$MAXN" >/dev/null
# shellcheck disable=SC1091
source /run/runbot-e2e/env
if [[ -n ${RUNBOT_BIN:-} ]]; then cp "$RUNBOT_BIN" "$work/runbot"; else go build -o "$work/runbot" ./cmd/runbot; fi

# The five commands an auditor runs on every host.
cmds=(
    "systemctl is-active sglang-dsv4-prefill sglang-dsv4-decode sglang-dsv4-router"
    "journalctl -u sglang-dsv4-decode -n 200 --no-pager -q | grep -c 'Decode batch' || true"
    "cat /proc/loadavg"
    "tr '\\0' ' ' < /proc/\$(systemctl show -p MainPID --value sglang-dsv4-decode)/cmdline | grep -c -- --disable-overlap-schedule || true"
    "grep -- --disaggregation-transfer-backend /root/serve_dsv4_decode.sh"
)
# The peers' one line: each command's output after a marker, its exit
# status after it, so that what each command did stays separable.
joined=""
i=0
for c in "${cmds[@]}"; do
    i=$((i + 1))
    joined+="echo ==rb-c$i; $c; echo ==rb-rc$i \$?; "
done

ssh_opts=(-i "$RUNBOT_TESTHOST_KEY" -o IdentitiesOnly=yes -o UserKnownHostsFile="$RUNBOT_TESTHOST_KNOWN_HOSTS"
    -o StrictHostKeyChecking=yes -o BatchMode=yes -o ControlMaster=no)
[[ -n $OPENSSH_KEX ]] && ssh_opts+=(-o KexAlgorithms="$OPENSSH_KEX")

# Per N: the runbot inventory and runbooks, the peers' host lists.
setup_n() {
    local n=$1 d="$work/n$1" hosts targets
    mkdir -p "$d"
    head -n "$n" "$RUNBOT_TESTHOST_RUN/hosts.tsv" > "$d/hosts.tsv"
    hosts=$(awk '{print $1}' "$d/hosts.tsv")
    {
        sed -n '/^hosts:/,/^deployments:/p' "$RUNBOT_TESTHOST_INVENTORY" | sed '$d'
        echo "deployments:"
        echo "  fleet:"
        echo "    roles:"
        for h in $hosts; do echo "      $h: {host: $h}"; done
    } > "$d/inventory.yaml"
    targets=$(echo "$hosts" | paste -sd, -)
    for shared in false true; do
        {
            echo "name: fleet-audit"
            echo "params: {deployment: {type: deployment, required: true}}"
            echo "ssh: {shared_session: $shared}"
            echo "steps:"
            i=0
            for c in "${cmds[@]}"; do
                i=$((i + 1))
                printf '  - {id: c%d, check: command, target: [%s], with: {cmd: %s}}\n' "$i" "$targets" "$(printf '%s' "$c" | python3 -c 'import json,sys; print(json.dumps(sys.stdin.read()))')"
            done
        } > "$d/audit-$shared.yaml"
        "$work/runbot" lint "$d/audit-$shared.yaml" >/dev/null
    done
    # The same facts through runbot's own checks, as a runbook is written.
    {
        echo "name: fleet-audit-native"
        echo "params: {deployment: {type: deployment, required: true}}"
        echo "steps:"
        for u in prefill decode router; do
            echo "  - {id: $u, check: unit_state, target: [$targets], with: {unit: sglang-dsv4-$u}}"
        done
        echo "  - {id: batches, check: log_progress, target: [$targets], with: {unit: sglang-dsv4-decode, progress: 'Decode batch'}}"
        echo "  - {id: load, check: read_file, target: [$targets], with: {path: /proc/loadavg}}"
        echo "  - {id: overlap, check: flag, target: [$targets], with: {flag: --disable-overlap-schedule, unit: sglang-dsv4-decode, script: /root/serve_dsv4_decode.sh}}"
        echo "  - {id: backend, check: grep_config, target: [$targets], with: {files: [/root/serve_dsv4_decode.sh], extract: {transfer_backend: '--disaggregation-transfer-backend[= ](\\S+)'}}}"
    } > "$d/audit-native.yaml"
    "$work/runbot" lint "$d/audit-native.yaml" >/dev/null
    # The floor of that audit: the connection with the three unit reads
    # only, then with the journal read as well; what the file reads add
    # is runbot-native less the second.
    { sed -n '1,3p' "$d/audit-native.yaml"; grep -E 'id: (prefill|decode|router),' "$d/audit-native.yaml"; } > "$d/audit-floor-units.yaml"
    { cat "$d/audit-floor-units.yaml"; grep -E 'id: batches,' "$d/audit-native.yaml"; } > "$d/audit-floor-journal.yaml"
    "$work/runbot" lint "$d/audit-floor-units.yaml" "$d/audit-floor-journal.yaml" >/dev/null
    awk -v key="$RUNBOT_TESTHOST_KEY" -v kh="$RUNBOT_TESTHOST_KNOWN_HOSTS" -v kex="$OPENSSH_KEX" '{
        args = "-o UserKnownHostsFile=" kh " -o StrictHostKeyChecking=yes -o IdentitiesOnly=yes"
        if (kex != "") args = args " -o KexAlgorithms=" kex
        printf "%s ansible_host=%s ansible_user=root ansible_ssh_private_key_file=%s ansible_ssh_common_args=\"%s\"\n", $1, $2, key, args }' \
        "$d/hosts.tsv" > "$d/ansible.ini"
    awk '{print "root@" $2}' "$d/hosts.tsv" > "$d/pssh.hosts"
}

# verify_runbot FILE N [STEPS]: every one of STEPS (default 5) steps ran ok
# on each of the N hosts.
verify_runbot() {
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); bad=[s for s in d["steps"] if s["status"]!="ok"]; n=len(d["steps"]); sys.exit(1 if bad or n!=int(sys.argv[3])*int(sys.argv[2]) else 0)' "$1" "$2" "${3:-5}" ||
        { echo "runbot: a step failed or is missing ($1)" >&2; return 1; }
}
# check_markers FILE COUNT: the last command's exit marker appears COUNT times.
check_markers() {
    local got
    got=$(grep -c '^==rb-rc5 ' "$1" || true)
    [[ $got == "$2" ]] || { echo "$1: $got of $2 hosts answered every command" >&2; return 1; }
}
# verify_native FILE N: every step ran on every host and read what the
# peers' commands print: the three units active, the load average, the
# decode process's command line and the script's transfer backend.
verify_native() {
    python3 -c '
import json, sys
d = json.load(open(sys.argv[1])); n = int(sys.argv[2])
steps = d["steps"]
bad = [s["id"] + ": " + s.get("error", s["status"]) for s in steps if s["status"] != "ok"]
v = lambda s: s.get("values") or {}
bad += [s["id"] + " " + s["target"] for s in steps if s["check"] == "unit_state" and v(s).get("active_state") != "active"]
bad += [s["id"] + " " + s["target"] for s in steps if s["check"] == "read_file" and len(v(s).get("text", "").split()) != 5]
bad += [s["id"] + " " + s["target"] for s in steps if s["check"] == "flag" and not v(s).get("process_known")]
bad += [s["id"] + " " + s["target"] for s in steps if s["check"] == "grep_config" and not v(s).get("found", {}).get("transfer_backend")]
if bad or len(steps) != 7 * n:
    print("runbot-native: %d of %d steps; wrong: %s" % (len(steps), 7 * n, "; ".join(bad[:5])), file=sys.stderr); sys.exit(1)
' "$1" "$2"
}
# run_TOOL N runs one fan-out; check_TOOL N verifies what it returned,
# outside the timed part.
run_runbot_native() { run_runbot "$1" native; }
check_runbot_native() { verify_native "$work/n$1/runbot.out" "$1"; }
run_runbot_floor_units() { run_runbot "$1" floor-units; }
check_runbot_floor_units() { verify_runbot "$work/n$1/runbot.out" "$1" 3; }
run_runbot_floor_journal() { run_runbot "$1" floor-journal; }
check_runbot_floor_journal() { verify_runbot "$work/n$1/runbot.out" "$1" 4; }
run_runbot_shared() { run_runbot "$1" true; }
check_runbot_shared() { verify_runbot "$work/n$1/runbot.out" "$1"; }
run_runbot() {
    local n=$1 shared=${2:-false} d="$work/n$1"
    "$work/runbot" run "$d/audit-$shared.yaml" -i "$d/inventory.yaml" -p deployment=fleet --store "$work/rb.db" --format json > "$d/runbot.out"
}
check_runbot() { verify_runbot "$work/n$1/runbot.out" "$1"; }
run_ssh_parallel() {
    local n=$1 d="$work/n$1" name addr
    rm -rf "$d/ssh.out" && mkdir -p "$d/ssh.out"
    while read -r name addr _; do
        ssh -n "${ssh_opts[@]}" "root@$addr" "$joined" > "$d/ssh.out/$name" 2>&1 &
    done < "$d/hosts.tsv"
    wait
}
check_ssh_parallel() { cat "$work/n$1/ssh.out"/* > "$work/n$1/ssh.all" && check_markers "$work/n$1/ssh.all" "$1"; }
run_pssh_once() {
    local n=$1 d="$work/n$1"
    rm -rf "$d/pssh.out"
    parallel-ssh -h "$d/pssh.hosts" -p "$n" -t 60 -o "$d/pssh.out" -x "${ssh_opts[*]}" "$joined" > /dev/null
}
check_pssh_once() { cat "$work/n$1/pssh.out"/* > "$work/n$1/pssh.all" && check_markers "$work/n$1/pssh.all" "$1"; }
run_ansible_raw() {
    local n=$1 d="$work/n$1"
    # The test hosts have no Python, so Ansible runs the raw module (no
    # module shipping: the cheapest Ansible can be). ANSIBLE_SSH_ARGS
    # replaces its ControlPersist default, which a one-shot run cannot
    # use and which would carry connections over from one repetition to
    # the next.
    ANSIBLE_HOST_KEY_CHECKING=True ANSIBLE_SSH_ARGS="-o ControlMaster=no" \
        ansible all -i "$d/ansible.ini" -f "$n" -m raw -a "$joined" > "$d/ansible.out"
}
check_ansible_raw() { check_markers "$work/n$1/ansible.out" "$1"; }

now() { date +%s.%N; }
# machine_jiffies: busy CPU time of the whole machine, in jiffies.
machine_jiffies() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8}' /proc/stat; }
# hosts_ns: CPU time of every test host, from their cgroups, in ns; empty
# when the machine has no cpuacct hierarchy for them.
hosts_ns() {
    local f
    for f in /sys/fs/cgroup/cpu,cpuacct/runbot-e2e/cpuacct.usage /sys/fs/cgroup/cpuacct/runbot-e2e/cpuacct.usage; do
        [[ -r $f ]] && { cat "$f"; return; }
    done
    for f in /sys/fs/cgroup/runbot-e2e/cpu.stat /sys/fs/cgroup/unified/runbot-e2e/cpu.stat; do
        [[ -r $f ]] && { awk '/^usage_usec/ {printf "%.0f\n", $2 * 1000}' "$f"; return; }
    done
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
hz=$(getconf CLK_TCK)

declare -A wall client hostcpu machine fails ts cs hs ms
# run_once TOOL N: one timed fan-out, appended to the tool's samples. It
# returns 1 when the output was incomplete, and the run does not count.
run_once() {
    local tool=$1 n=$2 t0 t1 h0 h1 m0 m1
    h0=$(hosts_ns) m0=$(machine_jiffies)
    TIMEFORMAT='%U %S'
    t0=$(now)
    { time "run_${tool//-/_}" "$n" 2> "$work/err"; } 2> "$work/time" || true
    t1=$(now)
    h1=$(hosts_ns) m1=$(machine_jiffies)
    if ! "check_${tool//-/_}" "$n"; then
        cat "$work/err" >&2
        return 1
    fi
    ts[$tool,$n]+="$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", b-a}') "
    cs[$tool,$n]+="$(awk '{printf "%.2f", $1 + $2}' "$work/time") "
    ms[$tool,$n]+="$(awk -v a="$m0" -v b="$m1" -v hz="$hz" 'BEGIN{printf "%.2f", (b-a)/hz}') "
    if [[ -n $h0 && -n $h1 ]]; then hs[$tool,$n]+="$(awk -v a="$h0" -v b="$h1" 'BEGIN{printf "%.2f", (b-a)/1e9}') "; else hs[$tool,$n]+="- "; fi
}
for n in $NS; do
    setup_n "$n"
    # One warm-up of each tool: page cache, the hosts' journal index. Hosts
    # just booted may still refuse a few logins, so a warm-up may fail;
    # the timed runs may not.
    for tool in $TOOLS; do "run_${tool//-/_}" "$n" && "check_${tool//-/_}" "$n" || echo "warm-up of $tool at N=$n failed" >&2; done
    for tool in $TOOLS; do fails[$tool,$n]=0 ts[$tool,$n]="" cs[$tool,$n]="" hs[$tool,$n]="" ms[$tool,$n]=""; done
    # The tools take turns, one run each per round, so that a machine
    # that slows down or speeds up during the run (a shared VM's speed
    # moves by ±15 % within minutes) weighs on every tool alike. A run
    # whose output is incomplete does not count; it is repeated, at most
    # twice per repetition for each tool, and reported.
    for ((r = 1; r <= REPS; r++)); do
        for tool in $TOOLS; do
            until run_once "$tool" "$n"; do
                fails[$tool,$n]=$((fails[$tool,$n] + 1))
                ((fails[$tool,$n] <= 2 * REPS)) || { echo "$tool keeps failing at N=$n" >&2; exit 1; }
            done
        done
    done
    for tool in $TOOLS; do
        wall[$tool,$n]=$(printf '%s\n' ${ts[$tool,$n]} | median)
        client[$tool,$n]=$(printf '%s\n' ${cs[$tool,$n]} | median)
        hostcpu[$tool,$n]=$(printf '%s\n' ${hs[$tool,$n]} | median)
        machine[$tool,$n]=$(printf '%s\n' ${ms[$tool,$n]} | median)
        echo "N=$n $tool: wall ${ts[$tool,$n]}s; client cpu ${cs[$tool,$n]}s; hosts cpu ${hs[$tool,$n]}s; machine cpu ${ms[$tool,$n]}s; failed runs ${fails[$tool,$n]}" >&2
    done
done

echo
echo "Fan-out benchmark, $(date -u +%Y-%m-%d), $(nproc) CPUs, load average before: $(cut -d' ' -f1-3 /proc/loadavg), median of $REPS, OpenSSH kex for the peers: ${OPENSSH_KEX:-default}"
echo
printf '| N hosts | tool | wall | client CPU | hosts CPU | machine CPU | machine CPU a host | failed runs |\n|---:|---|---:|---:|---:|---:|---:|---:|\n'
for n in $NS; do
    for tool in $TOOLS; do
        printf '| %s | %s | %.2f s | %.2f s | %s | %.2f s | %.0f ms | %s |\n' "$n" "$tool" "${wall[$tool,$n]}" "${client[$tool,$n]}" \
            "$([[ ${hostcpu[$tool,$n]} == - ]] && echo – || printf '%.2f s' "${hostcpu[$tool,$n]}")" "${machine[$tool,$n]}" \
            "$(awk -v m="${machine[$tool,$n]}" -v n="$n" 'BEGIN{print m * 1000 / n}')" "${fails[$tool,$n]}"
    done
done
echo
printf '| N hosts | best peer | runbot-native | best peer ÷ runbot-native | runbot-shared | best peer ÷ runbot-shared |\n|---:|---|---:|---:|---:|---:|\n'
for n in $NS; do
    best="" bt=""
    for tool in ssh-parallel pssh-once ansible-raw; do
        [[ -n ${wall[$tool,$n]:-} ]] || continue
        if [[ -z $bt ]] || awk -v a="${wall[$tool,$n]}" -v b="$bt" 'BEGIN{exit !(a < b)}'; then best=$tool bt=${wall[$tool,$n]}; fi
    done
    [[ -n $best ]] || continue
    awk -v n="$n" -v r="${wall[runbot-native,$n]:-0}" -v s="${wall[runbot-shared,$n]:-0}" -v b="$bt" -v name="$best" \
        'function ratio(x) { return x > 0 ? sprintf("**%.2f×**", b / x) : "–" }
         function secs(x) { return x > 0 ? sprintf("%.2f s", x) : "–" }
         BEGIN {printf "| %d | %s %.2f s | %s | %s | %s | %s |\n", n, name, b, secs(r), ratio(r), secs(s), ratio(s)}'
done
