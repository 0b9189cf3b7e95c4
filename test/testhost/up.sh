#!/usr/bin/env bash
# up.sh — boot N real, systemd-booted Debian test hosts, each running the
# incident's simulated SGLang PD deployment as systemd units, reachable over SSH.
#
#   usage: bash test/testhost/up.sh [--fresh] [N]
#     N        boot th1..thN (default 1); hosts that already run are kept
#     --fresh  restart hosts that already run too, so all N start pristine
#              (fresh journal, original launch scripts, the current sglang-sim),
#              and stop hosts beyond N: exactly th1..thN run afterwards
#
# Every host thI: its own network namespace at 10.200.0.(10+I), systemd as PID 1,
# journald, sshd (root and runbot log in with $CACHE/id_ed25519; each host has its
# own host key), /usr/local/bin/sglang-sim built from ./cmd/sglang-sim,
# /root/serve_dsv4_{prefill,decode}.sh and units sglang-dsv4-{prefill,decode,router}
# listening on the host's loopback only (router 30001, prefill 30100 + bootstrap
# 8998, decode 30200).
# Stdout: one line per host: NAME ADDRESS SSH_PORT DEPLOYMENT
# Files in $RUN: inventory.yaml (runbot), known_hosts, ssh_config, hosts.tsv, env.
# On failure it stops the hosts it started. Stop everything with down.sh.
set -Eeuo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=image.sh
source "$TESTHOST_DIR/image.sh"

FRESH=0
COUNT=
for a in "$@"; do
    case $a in
        --fresh) FRESH=1 ;;
        -h | --help) sed -n '2,/^set -Eeuo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *[!0-9]* | '') die "unknown argument '$a' (usage: up.sh [--fresh] [N])" ;;
        *) COUNT=$a ;;
    esac
done
COUNT=${COUNT:-1}
((COUNT >= 1 && COUNT <= 100)) || die "N must be 1..100, got $COUNT"
[[ $(id -u) == 0 ]] || die "must run as root: it creates network namespaces, a bridge and containers"
wait_for_tests

# ------------------------------------------------------------ machine packages
ensure_packages() {
    local need=()
    command -v systemd-nspawn >/dev/null || need+=(systemd-container)
    command -v debootstrap >/dev/null || need+=(debootstrap)
    command -v ip >/dev/null || need+=(iproute2)
    command -v iptables >/dev/null || need+=(iptables)   # testhost.Partition drops traffic in a host's namespace
    command -v ssh >/dev/null && command -v ssh-keygen >/dev/null || need+=(openssh-client)
    command -v flock >/dev/null && command -v findmnt >/dev/null || need+=(util-linux)
    ((${#need[@]})) || return 0
    command -v apt-get >/dev/null || die "missing Debian packages: ${need[*]} (no apt-get here to install them)"
    log "installing ${need[*]} (apt-get)"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}"; } >&2 \
        || die "could not install the Debian packages ${need[*]}; install them and run up.sh again"
}

# The Debian mirror this machine's apt already uses (deb822 sources first).
apt_mirror() {
    local m=""
    [[ -r /etc/apt/sources.list.d/debian.sources ]] &&
        m=$(awk '/^URIs:/ && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources)
    [[ -z $m && -r /etc/apt/sources.list ]] &&
        m=$(awk '$1 == "deb" && $0 !~ /security/ {for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) {print $i; exit}}' /etc/apt/sources.list)
    printf '%s' "${m:-http://deb.debian.org/debian}"
}

# ------------------------------------------------------------------- image
# remove_tree DIR deletes a half-built root file system. debootstrap mounts /proc
# and /sys inside it; a killed build leaves them mounted, and rm -rf must never
# walk into them.
remove_tree() {
    local m
    [[ -e $1 ]] || return 0
    awk -v p="$1/" 'index($2, p) == 1 {print $2}' /proc/self/mounts | sort -r | while read -r m; do
        umount -l "$m" 2>/dev/null
    done
    rm -rf --one-file-system "$1"
}

build_image() {
    # Comment lines and blank lines do not count: rewording a comment is no reason
    # to rebuild.
    IMAGE_KEY=$({ grep -v -e '^[[:space:]]*#' -e '^[[:space:]]*$' "$TESTHOST_DIR/image.sh"
                  echo "suite=$IMAGE_SUITE arch=$(dpkg --print-architecture 2>/dev/null || uname -m)"; } |
        sha256sum | cut -c1-12)
    IMAGE=$CACHE/image-$IMAGE_KEY
    [[ -f $IMAGE/.testhost-image ]] && return 0
    local t0=$SECONDS mirror
    mirror=${RUNBOT_TESTHOST_MIRROR:-$(apt_mirror)}
    BUILDING=$CACHE/.image-$IMAGE_KEY.new
    remove_tree "$BUILDING"
    mkdir -p "$CACHE/debs"
    log "building the host image $IMAGE (debootstrap $IMAGE_SUITE from $mirror, ~1 min, once)"
    debootstrap --variant=minbase --include="$IMAGE_PKGS" --cache-dir="$CACHE/debs" \
        "$IMAGE_SUITE" "$BUILDING" "$mirror" > "$CACHE/debootstrap.log" 2>&1 ||
        { tail -20 "$CACHE/debootstrap.log" >&2; die "debootstrap failed (log: $CACHE/debootstrap.log)"; }
    customize_image "$BUILDING"
    echo "$IMAGE_KEY" > "$BUILDING/.testhost-image"
    mv "$BUILDING" "$IMAGE"
    BUILDING=
    log "built the host image in $((SECONDS - t0))s ($(du -sh "$IMAGE" | cut -f1))"
}

# gc_images removes images no running host uses any more.
gc_images() {
    local img name used
    for img in "$CACHE"/image-*/; do
        img=${img%/}
        [[ -d $img && $img != "$IMAGE" ]] || continue
        used=0
        for name in $(host_names); do
            [[ $(cat "$(host_dir "$name")/image" 2>/dev/null) == "$img" ]] && used=1
        done
        ((used)) || { remove_tree "$img"; log "removed the old image $img"; }
    done
}

ensure_key() {
    [[ -f $KEY && -f $KEY.pub ]] && return 0
    rm -f "$KEY" "$KEY.pub"
    ssh-keygen -q -t ed25519 -N '' -C runbot-testhost -f "$KEY"
}

# --------------------------------------------------------------- sglang-sim
find_go() {
    local g
    for g in "${GO:-}" "$(command -v go 2>/dev/null)" /usr/local/go/bin/go; do
        [[ -n $g && -x $g ]] && { echo "$g"; return 0; }
    done
    return 1
}

# build_sim puts a static sglang-sim into $RUN/bin: built from ./cmd/sglang-sim,
# or copied from RUNBOT_TESTHOST_SIM. Each host gets a hard link at boot, so a
# new build never changes the binary under a running host.
build_sim() {
    local go t0=$SECONDS
    mkdir -p "$RUN/bin"
    if [[ -n ${RUNBOT_TESTHOST_SIM:-} ]]; then
        cp "$RUNBOT_TESTHOST_SIM" "$RUN/bin/sglang-sim.new" || die "cannot copy RUNBOT_TESTHOST_SIM=$RUNBOT_TESTHOST_SIM"
    else
        go=$(find_go) || die "Go is needed to build ./cmd/sglang-sim (install it from https://go.dev/dl, or set RUNBOT_TESTHOST_SIM to a built sglang-sim)"
        (cd "$REPO" && CGO_ENABLED=0 "$go" build -o "$RUN/bin/sglang-sim.new" ./cmd/sglang-sim) ||
            die "building ./cmd/sglang-sim failed"
    fi
    chmod 755 "$RUN/bin/sglang-sim.new"
    mv -f "$RUN/bin/sglang-sim.new" "$RUN/bin/sglang-sim"
    log "sglang-sim ready in $((SECONDS - t0))s"
}

# ----------------------------------------------------------------- network
ensure_bridge() {
    local other
    other=$(ip -4 -o addr show | awk -v p="$SUBNET." -v b="$BRIDGE" '$2 != b && index($4, p) == 1 {print $2}' | sort -u | tr '\n' ' ')
    [[ -z $other ]] || die "$SUBNET.0/24 is already used by ${other% } (another testhost, e.g. one with bridge rbt-br0?): stop it, or set RUNBOT_TESTHOST_SUBNET"
    if ! ip link show "$BRIDGE" >/dev/null 2>&1; then
        # A fixed MAC: a bridge otherwise takes its lowest port's MAC, which changes
        # as hosts come and go and leaves the hosts' ARP entries for .1 stale.
        ip link add "$BRIDGE" address 02:52:45:00:ff:01 type bridge
    fi
    ip addr replace "$SUBNET.1/24" dev "$BRIDGE"
    ip link set "$BRIDGE" up
}

write_hosts_file() {   # /etc/hosts of every host; rewritten in place so running hosts see it
    local n=$1 i
    {
        printf '127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n%s.1 runner\n' "$SUBNET"
        for ((i = 1; i <= n; i++)); do echo "$(addr_of "th$i") th$i"; done
    } > "$RUN/hosts.tmp"
    touch "$RUN/hosts"
    cat "$RUN/hosts.tmp" > "$RUN/hosts"
    rm -f "$RUN/hosts.tmp"
}

# Every host's systemd, journald, logind... holds inotify instances, and all count
# against root's fs.inotify.max_user_instances (128 runs out at ~17 hosts, then
# units fail with "Failed to create inotify object"). down.sh restores it.
ensure_inotify() {
    local want=$((256 + 16 * $1)) cur
    cur=$(cat /proc/sys/fs/inotify/max_user_instances)
    ((cur >= want)) && return 0
    [[ -f $RUN/inotify.orig ]] || echo "$cur" > "$RUN/inotify.orig"
    echo "$want" > /proc/sys/fs/inotify/max_user_instances
    log "raised fs.inotify.max_user_instances $cur -> $want (down.sh restores it)"
}

# ------------------------------------------------------------------- hosts
# provision NAME fills DIR/provision with what the host mounts read-only: units
# (with the .wants links their WantedBy= asks for), launch scripts and sglang-sim.
provision() {
    local name=$1 dir p u base tgt
    dir=$(host_dir "$name")
    p=$dir/provision
    mkdir -p "$p/units" "$p/scripts"
    for u in "$TESTHOST_DIR"/host/units/*.service; do
        base=$(basename "$u")
        cp "$u" "$p/units/$base"
        for tgt in $(sed -n 's/^WantedBy=//p' "$u"); do
            mkdir -p "$p/units/$tgt.wants"
            ln -s "/usr/local/lib/systemd/system/$base" "$p/units/$tgt.wants/$base"
        done
    done
    install -m 0755 "$TESTHOST_DIR"/host/serve_dsv4_*.sh "$p/scripts/"
    ln "$RUN/bin/sglang-sim" "$p/sglang-sim" 2>/dev/null || cp "$RUN/bin/sglang-sim" "$p/sglang-sim"
    mkdir -p "$dir/hostkey"
    ssh-keygen -q -t ed25519 -N '' -C "root@$name" -f "$dir/hostkey/ssh_host_ed25519_key"
    od -An -tx1 -N16 /dev/urandom | tr -d ' \n' > "$dir/machine-id"
    echo >> "$dir/machine-id"
}

start_host() {
    local name=$1 dir ns root cgs=() i=${1#th}
    dir=$(host_dir "$name")
    ns=$(netns_of "$name")
    STARTED+=("$name")   # from here on, a failure must clean this host up
    # leftovers of a host that died without down.sh
    kill_cgroup "$name" || die "$name: cannot kill the processes left by an earlier run"
    ip netns del "$ns" 2>/dev/null || true
    rm -rf --one-file-system "$dir"
    mkdir -p "$dir"
    echo "$IMAGE" > "$dir/image"
    provision "$name"

    ip netns add "$ns"
    # A fixed MAC per host: a re-created host keeps the MAC in this machine's ARP
    # cache (a new random one made it unreachable for up to ~50 s).
    ip neigh del "$(addr_of "$name")" dev "$BRIDGE" 2>/dev/null || true
    ip link add "$PREFIX-$name" type veth peer name eth0 \
        address "$(printf '02:52:45:00:%02x:%02x' $((i / 256)) $((i % 256)))" netns "$ns"
    ip link set "$PREFIX-$name" master "$BRIDGE" up
    ip -n "$ns" link set lo up
    ip -n "$ns" addr add "$(addr_of "$name")/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" route add default via "$SUBNET.1"

    local p=$dir/provision
    # --register=no --keep-unit: this machine's PID 1 is not systemd (no machined,
    # no system bus). --volatile=overlay: the image stays read-only, every write
    # goes to a tmpfs that vanishes at poweroff.
    local args=(-b -D "$IMAGE" --volatile=overlay -M "$(machine_of "$name")" --hostname="$name"
        --register=no --keep-unit --console=read-only
        --network-namespace-path="/run/netns/$ns"
        --bind-ro="$dir/machine-id:/etc/machine-id"
        --bind-ro="$RUN/hosts:/etc/hosts"
        --bind-ro="$KEY.pub:/root/.ssh/authorized_keys"
        --bind-ro="$KEY.pub:/home/runbot/.ssh/authorized_keys"
        --bind-ro="$dir/hostkey:/etc/ssh/testhost"
        --bind-ro="$p/units:/usr/local/lib/systemd/system"
        --bind-ro="$p/scripts:/opt/testhost/scripts"
        --bind-ro="$p/sglang-sim:/usr/local/bin/sglang-sim")
    # shellcheck disable=SC2206
    [[ -n ${RUNBOT_TESTHOST_NSPAWN_ARGS:-} ]] && args+=($RUNBOT_TESTHOST_NSPAWN_ARGS)
    printf '%s\0' "${args[@]}" > "$dir/nspawn.args"

    for root in $(cgroup_roots); do
        [[ -d $root/$CGROUP_NAME/$name ]] && find "$root/$CGROUP_NAME/$name" -depth -type d -exec rmdir {} + 2>/dev/null
        mkdir -p "$root/$CGROUP_NAME/$name"
        cgs+=("$root/$CGROUP_NAME/$name")
    done
    echo "${cgs[*]}" > "$dir/cgroups"
    setsid bash "$TESTHOST_DIR/supervise.sh" "$dir" < /dev/null > /dev/null 2>&1 9>&- &
    echo $! > "$dir/supervisor.pid"
}

ssh_opts() {
    printf '%s\n' -i "$KEY" -o BatchMode=yes -o IdentitiesOnly=yes -o StrictHostKeyChecking=yes \
        -o UserKnownHostsFile="$RUN/known_hosts" -o LogLevel=ERROR -o ConnectTimeout=2
}

# Runs inside a booting host: waits for systemd to finish booting, then for all
# three roles to answer /health. Exit 3 with a report when they do not.
# shellcheck disable=SC2016 # expanded on the host
READY_SCRIPT='
state=$(timeout 60 systemctl is-system-running --wait 2>/dev/null)
for i in $(seq 1 150); do
    if curl -fs -o /dev/null -m 1 http://127.0.0.1:'$PREFILL_PORT'/health &&
       curl -fs -o /dev/null -m 1 http://127.0.0.1:'$DECODE_PORT'/health &&
       curl -fs -o /dev/null -m 1 http://127.0.0.1:'$ROUTER_PORT'/health; then
        echo "$state"; exit 0
    fi
    sleep 0.1
done
echo "systemd says ${state:-nothing}; the simulated deployment did not answer /health within 15s"
systemctl --no-pager --failed
for u in sglang-dsv4-prefill sglang-dsv4-decode sglang-dsv4-router; do
    echo "--- journalctl -u $u (last 15 lines)"; journalctl -u "$u" -n 15 --no-pager -o short-iso
done
exit 3'

wait_host() {   # waits until sshd answers, systemd booted and the deployment serves
    local name=$1 dir out rc deadline=$((SECONDS + BOOT_TIMEOUT))
    dir=$(host_dir "$name")
    local opts
    mapfile -t opts < <(ssh_opts)
    while ((SECONDS < deadline)); do
        rc=0
        # shellcheck disable=SC2029 # the script is meant to run on the host
        out=$(ssh "${opts[@]}" "root@$(addr_of "$name")" "$READY_SCRIPT" 2>&1) || rc=$?
        case $rc in
            0) [[ $out == running ]] || { log "$name booted, but systemd says '$out':"; ssh "${opts[@]}" "root@$(addr_of "$name")" 'systemctl --no-pager --failed' >&2 || true; }
               return 0 ;;
            3) printf '%s\n' "$out" >&2; die "$name: the simulated deployment did not come up" ;;
        esac
        if ! pid_of "$dir/supervisor.pid" "supervise.sh $dir" >/dev/null; then
            tail -30 "$dir/console.log" >&2 || true
            die "$name: systemd-nspawn exited during boot (its console log is above)"
        fi
        sleep 0.2
    done
    tail -30 "$dir/console.log" >&2 || true
    die "$name: no SSH login within ${BOOT_TIMEOUT}s (last ssh said: $out; its console log is above)"
}

# -------------------------------------------------------------------- main
STARTED=()
BUILDING=
LAST_ERR=
DIED=0
die() { log "ERROR: $*"; DIED=1; exit 1; }
on_exit() {
    local rc=$? name
    set +e
    [[ -n $BUILDING ]] && remove_tree "$BUILDING"
    rm -f "$RUN/bin/sglang-sim.new"
    if ((rc != 0)); then
        ((DIED)) || [[ -z $LAST_ERR ]] || log "ERROR: failed at $LAST_ERR"
        if ((${#STARTED[@]})); then
            log "failed: stopping the hosts this run started (${STARTED[*]})"
            # A host still booting ignores the poweroff request; no need to wait long.
            # shellcheck disable=SC2034 # read by stop_host
            STOP_TIMEOUT=2
            for name in "${STARTED[@]}"; do stop_host "$name"; done
        fi
        if compgen -G "$RUN/th*" >/dev/null; then
            write_outputs 2>/dev/null   # describe the hosts that were up before
        else
            teardown_shared
        fi
    fi
    exit "$rc"
}
trap on_exit EXIT
# set -e ends the script silently; remember the failing command for on_exit.
trap 'LAST_ERR="line $LINENO: $BASH_COMMAND"' ERR
trap 'exit 130' INT
trap 'exit 143' TERM HUP

ensure_packages
mkdir -p "$CACHE" "$RUN"
exec 9> "$CACHE/.lock"
flock -w 900 9 || die "another up.sh or down.sh holds $CACHE/.lock"
build_image
ensure_key
build_sim
ensure_bridge
t0=$(date +%s.%N)
BOOT=()
RESTART=()
EXTRA=()   # with --fresh, hosts beyond N stop: exactly th1..thN run afterwards
total=$COUNT
for name in $(host_names); do
    if ((${name#th} > COUNT)); then
        if ((FRESH)); then EXTRA+=("$name"); else total=${name#th}; fi
    fi
done
for ((i = 1; i <= COUNT; i++)); do
    name=th$i
    if ! is_running "$name"; then
        BOOT+=("$name")
    elif ((FRESH)) || [[ $(cat "$(host_dir "$name")/image" 2>/dev/null) != "$IMAGE" ]]; then
        RESTART+=("$name")
    fi
done
# Power off all these hosts at once, then wait for each: ~1 s in total.
for name in "${RESTART[@]}" "${EXTRA[@]}"; do
    pid=$(pid_of "$(host_dir "$name")/nspawn.pid" "-M $(machine_of "$name") ") && kill -TERM "$pid"
done
for name in "${RESTART[@]}" "${EXTRA[@]}"; do stop_host "$name"; done
((${#EXTRA[@]} == 0)) || log "stopped ${EXTRA[*]} (--fresh keeps exactly $COUNT)"
write_hosts_file "$total"
ensure_inotify "$total"
for name in "${BOOT[@]}" "${RESTART[@]}"; do start_host "$name"; done
write_known_hosts
for name in "${STARTED[@]}"; do wait_host "$name"; done
if ((${#STARTED[@]})); then
    log "booted ${STARTED[*]} in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')s"
fi
write_outputs
gc_images
for ((i = 1; i <= COUNT; i++)); do
    grep "^th$i"$'\t' "$RUN/hosts.tsv" | cut -f1,2,3,5 | tr '\t' ' '
done
log "inventory: $RUN/inventory.yaml (source $RUN/env for the other paths)"
