# lib.sh — settings and helpers shared by up.sh and down.sh. Sourced, never run.
# shellcheck shell=bash disable=SC2034 # the variables are used by up.sh and down.sh

TESTHOST_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$TESTHOST_DIR/../.." && pwd)

CACHE=${RUNBOT_TESTHOST_CACHE:-/var/cache/runbot-testhost}
RUN=${RUNBOT_TESTHOST_RUN:-/run/runbot-e2e}
SUBNET=${RUNBOT_TESTHOST_SUBNET:-10.200.0}
BOOT_TIMEOUT=${RUNBOT_TESTHOST_BOOT_TIMEOUT:-120}
STOP_TIMEOUT=${RUNBOT_TESTHOST_STOP_TIMEOUT:-20}
KEY=$CACHE/id_ed25519

# Names on this machine. They differ from /work/shared/testhost's "rbt-" names
# so that both can never mistake the other's hosts for their own.
PREFIX=rbe
BRIDGE=$PREFIX-br0
CGROUP_NAME=runbot-e2e

# Ports of the simulated deployment inside every host (own network namespace,
# so every host uses the incident's ports).
ROUTER_PORT=30001
PREFILL_PORT=30100
DECODE_PORT=30200

log() { printf '%s: %s\n' "$(basename "$0")" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# USE_LOCK is the file a test process holds a flock(2) on while one of its
# tests uses the hosts (testhost.UseLock in test/e2e/testhost).
USE_LOCK=/run/runbot-e2e.use.lock
# wait_for_tests waits until no test process uses the hosts, so that a
# script run by hand (or by a second go test) does not restart or stop
# hosts under a running test. A script the lock holder itself runs (its
# environment says so) goes on at once. It only waits: holding the lock
# here would hand it to every daemon the script starts.
wait_for_tests() {
    [[ ${RUNBOT_TESTHOST_USE_LOCK_HELD:-} == 1 ]] && return 0
    if ! flock -n "$USE_LOCK" true 2>/dev/null; then
        log "a test process uses the test hosts; waiting for it (up to 30 min, $USE_LOCK)"
        flock -w 1800 "$USE_LOCK" true || die "a test process has used the test hosts for 30 minutes ($USE_LOCK)"
    fi
}

host_dir()  { echo "$RUN/$1"; }          # th3 -> /run/runbot-e2e/th3
addr_of()   { echo "$SUBNET.$((10 + ${1#th}))"; }
netns_of()  { echo "$PREFIX-$1"; }
machine_of() { echo "$PREFIX-$1"; }

# cgroup hierarchies that nspawn and the hosts' systemd use for tracking.
cgroup_roots() {
    if [[ $(stat -fc %T /sys/fs/cgroup) == cgroup2fs ]]; then
        echo /sys/fs/cgroup
        return
    fi
    [[ -e /sys/fs/cgroup/unified/cgroup.procs ]] && echo /sys/fs/cgroup/unified
    [[ -e /sys/fs/cgroup/systemd/cgroup.procs ]] && echo /sys/fs/cgroup/systemd
    return 0
}

# pid_of FILE PATTERN prints the pid stored in FILE if that process is alive and
# its command line contains PATTERN (a recycled pid is never mistaken for ours).
pid_of() {
    local pid
    pid=$(cat "$1" 2>/dev/null) || return 1
    [[ $pid =~ ^[0-9]+$ && -r /proc/$pid/cmdline ]] || return 1
    tr '\0' ' ' < "/proc/$pid/cmdline" | grep -qF -- "$2" || return 1
    echo "$pid"
}

# is_running NAME: true while the host's systemd-nspawn is alive.
is_running() {
    pid_of "$(host_dir "$1")/nspawn.pid" "-M $(machine_of "$1") " >/dev/null
}

wait_gone() {   # PID SECONDS
    local end=$((SECONDS + $2))
    while kill -0 "$1" 2>/dev/null; do
        ((SECONDS < end)) || return 1
        sleep 0.1
    done
}

# kill_cgroup NAME kills every process left in the host's cgroups: a container
# whose systemd-nspawn was SIGKILLed keeps running otherwise. It touches only
# the host's own cgroups.
kill_cgroup() {
    local name=$1 root p n
    for root in $(cgroup_roots); do
        [[ ! -e $root/$CGROUP_NAME/$name/cgroup.kill ]] || echo 1 > "$root/$CGROUP_NAME/$name/cgroup.kill" || true
    done
    for ((n = 0; n < 50; n++)); do
        p=$(for root in $(cgroup_roots); do
                [[ -d $root/$CGROUP_NAME/$name ]] && find "$root/$CGROUP_NAME/$name" -name cgroup.procs -exec cat {} +
            done 2>/dev/null | sort -u)
        [[ -z $p ]] && return 0
        # shellcheck disable=SC2086
        kill -KILL $p 2>/dev/null || true
        sleep 0.1
    done
    return 1
}

# stop_host NAME powers the host off (SIGTERM to systemd-nspawn makes the host's
# systemd shut down in order), kills it after STOP_TIMEOUT seconds, and removes
# its network namespace, cgroups and run directory.
stop_host() {
    local name=$1 dir pid wpid root
    dir=$(host_dir "$name")
    touch "$dir/stop" 2>/dev/null || true
    if pid=$(pid_of "$dir/nspawn.pid" "-M $(machine_of "$name") "); then
        kill -TERM "$pid" 2>/dev/null || true
        if ! wait_gone "$pid" "$STOP_TIMEOUT"; then
            log "$name: no clean poweroff within ${STOP_TIMEOUT}s, killing it"
            kill -KILL "$pid" 2>/dev/null || true
            wait_gone "$pid" 10 || true
        fi
    fi
    if wpid=$(pid_of "$dir/supervisor.pid" "supervise.sh $dir"); then
        wait_gone "$wpid" 5 || kill -KILL "$wpid" 2>/dev/null || true
    fi
    kill_cgroup "$name" || log "$name: processes are left in its cgroup"
    ip netns del "$(netns_of "$name")" 2>/dev/null || true
    ip link del "$PREFIX-$name" 2>/dev/null || true   # normally gone with the netns
    for root in $(cgroup_roots); do
        [[ -d $root/$CGROUP_NAME/$name ]] || continue
        find "$root/$CGROUP_NAME/$name" -depth -type d -exec rmdir {} + 2>/dev/null || true
        [[ ! -d $root/$CGROUP_NAME/$name ]] || log "$name: cgroup $root/$CGROUP_NAME/$name is still busy"
    done
    rmdir "/run/systemd/nspawn/propagate/$(machine_of "$name")" 2>/dev/null || true
    rm -rf --one-file-system "$dir" || true
    return 0
}

# host_names lists every host this tooling knows of: run directories, network
# namespaces and cgroups (the latter two catch hosts whose run directory is gone).
host_names() {
    {
        local d root ns
        for d in "$RUN"/th*/; do [[ -d $d ]] && basename "$d"; done
        while read -r ns _; do [[ $ns == "$PREFIX"-th* ]] && echo "${ns#"$PREFIX"-}"; done < <(ip netns list 2>/dev/null)
        for root in $(cgroup_roots); do
            for d in "$root/$CGROUP_NAME"/th*/; do [[ -d $d ]] && basename "$d"; done
        done
        true
    } | sort -uV
}

# teardown_shared removes what all hosts share once none is left: the bridge, the
# raised inotify limit, the run directory and the cgroup parents.
teardown_shared() {
    local root
    compgen -G "$RUN/th*" >/dev/null && return 0
    ! ip link del "$BRIDGE" 2>/dev/null || log "removed bridge $BRIDGE"
    if [[ -f $RUN/inotify.orig ]]; then
        cat "$RUN/inotify.orig" > /proc/sys/fs/inotify/max_user_instances
        log "restored fs.inotify.max_user_instances to $(cat "$RUN/inotify.orig")"
    fi
    rm -rf --one-file-system "$RUN" || true
    for root in $(cgroup_roots); do rmdir "$root/$CGROUP_NAME" 2>/dev/null || true; done
    # systemd-nspawn's own state directories, if nothing else uses them
    rmdir /run/systemd/nspawn/propagate /run/systemd/nspawn/locks /run/systemd/nspawn 2>/dev/null || true
    return 0
}

host_key_line() {   # NAME -> known_hosts line
    echo "$(addr_of "$1") $(cut -d' ' -f1,2 "$(host_dir "$1")/hostkey/ssh_host_ed25519_key.pub")"
}

write_known_hosts() {
    local name
    for name in $(host_names); do
        [[ -f $(host_dir "$name")/hostkey/ssh_host_ed25519_key.pub ]] && host_key_line "$name"
    done > "$RUN/known_hosts.tmp"
    mv -f "$RUN/known_hosts.tmp" "$RUN/known_hosts"
}

# write_outputs describes every running host: hosts.tsv, ssh_config, env and the
# runbot inventory (one deployment per host).
write_outputs() {
    local name addr running=()
    for name in $(host_names); do is_running "$name" && running+=("$name"); done
    [[ $KEY$RUN =~ ^[A-Za-z0-9/._-]+$ ]] || die "paths with special characters are not supported: $KEY, $RUN"
    write_known_hosts
    : > "$RUN/hosts.tsv"
    : > "$RUN/ssh_config"
    {
        echo "# runbot inventory of the test hosts, written by test/testhost/up.sh"
        echo "hosts:"
        for name in "${running[@]}"; do
            echo "  $name: {address: $(addr_of "$name"), port: 22, user: root, identity_files: [$KEY], known_hosts: [$RUN/known_hosts]}"
        done
        echo "deployments:"
        for name in "${running[@]}"; do
            cat <<EOF
  dsv4-$name:
    roles:
      router:  {host: $name, unit: sglang-dsv4-router,  url: "http://127.0.0.1:$ROUTER_PORT"}
      prefill: {host: $name, unit: sglang-dsv4-prefill, url: "http://127.0.0.1:$PREFILL_PORT", launch_script: /root/serve_dsv4_prefill.sh}
      decode:  {host: $name, unit: sglang-dsv4-decode,  url: "http://127.0.0.1:$DECODE_PORT", launch_script: /root/serve_dsv4_decode.sh}
EOF
        done
    } > "$RUN/inventory.yaml.tmp"
    mv -f "$RUN/inventory.yaml.tmp" "$RUN/inventory.yaml"
    for name in "${running[@]}"; do
        addr=$(addr_of "$name")
        printf '%s\t%s\t22\troot\tdsv4-%s\n' "$name" "$addr" "$name" >> "$RUN/hosts.tsv"
        printf 'Host %s\n  HostName %s\n  Port 22\n  User root\n  IdentityFile %s\n  IdentitiesOnly yes\n  UserKnownHostsFile %s\n  StrictHostKeyChecking yes\n  BatchMode yes\n\n' \
            "$name" "$addr" "$KEY" "$RUN/known_hosts" >> "$RUN/ssh_config"
    done
    cat > "$RUN/env" <<EOF
RUNBOT_TESTHOST_RUN=$RUN
RUNBOT_TESTHOST_INVENTORY=$RUN/inventory.yaml
RUNBOT_TESTHOST_KNOWN_HOSTS=$RUN/known_hosts
RUNBOT_TESTHOST_SSH_CONFIG=$RUN/ssh_config
RUNBOT_TESTHOST_KEY=$KEY
RUNBOT_TESTHOST_HOSTS="${running[*]}"
EOF
}
