#!/usr/bin/env bash
# down.sh — stop test hosts started by up.sh and remove what up.sh set up on
# this machine: containers, network namespaces, veths, the rbe-br0 bridge,
# cgroups, the run directory, and the raised inotify limit.
#
#   usage: bash test/testhost/down.sh [--purge] [--power-cut] [NAME...]
#     NAME     a host such as th2 (default: every host)
#     --purge  also delete the cache: the host image, .debs and the login key
#     --power-cut  end the named hosts as a power failure does: their link goes
#              down first (no FIN, no RST, nothing more leaves or arrives), then
#              every process in them is SIGKILLed, with no shutdown at all
#
# Each host gets SIGTERM on its systemd-nspawn, which makes the host's systemd
# power off in order (~1 s); SIGKILL after RUNBOT_TESTHOST_STOP_TIMEOUT seconds.
set -uo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

[[ $(id -u) == 0 ]] || die "must run as root"
PURGE=0
POWERCUT=0
NAMES=()
for a in "$@"; do
    case $a in
        --purge) PURGE=1 ;;
        --power-cut) POWERCUT=1 ;;
        th[0-9]*) NAMES+=("$a") ;;
        -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown argument '$a' (usage: down.sh [--purge] [--power-cut] [NAME...])" ;;
    esac
done
wait_for_tests
if ((POWERCUT)); then
    ((${#NAMES[@]})) || die "--power-cut needs the hosts to cut, e.g. down.sh --power-cut th2"
    for name in "${NAMES[@]}"; do
        # The link first: the kill closes the host's sockets, and a machine that
        # lost power sends no FIN or RST to its peers.
        ip link set "$PREFIX-$name" down 2>/dev/null || true
        kill_cgroup "$name" || log "$name: processes are left in its cgroup"
        log "cut the power of $name"
    done
fi
((${#NAMES[@]})) || mapfile -t NAMES < <(host_names)

if [[ -d $CACHE ]]; then
    exec 9> "$CACHE/.lock"
    flock -w 300 9 || die "another up.sh or down.sh holds $CACHE/.lock"
fi

# Power every host off at once, then wait for each: N hosts take ~1 s, not N s.
for name in "${NAMES[@]}"; do
    dir=$(host_dir "$name")
    touch "$dir/stop" 2>/dev/null
    pid=$(pid_of "$dir/nspawn.pid" "-M $(machine_of "$name") ") && kill -TERM "$pid"
done
for name in "${NAMES[@]}"; do
    stop_host "$name"
    log "stopped $name"
done

if compgen -G "$RUN/th*" >/dev/null; then
    write_outputs   # some hosts keep running: describe only those
    log "still running: $(cd "$RUN" && echo th* | tr -d /)"
else
    teardown_shared
fi

if ((PURGE)); then
    for img in "$CACHE"/image-* "$CACHE"/.image-*; do
        [[ -e $img ]] || continue
        awk -v p="$img/" 'index($2, p) == 1 {print $2}' /proc/self/mounts | sort -r | xargs -r -n1 umount -l
    done
    rm -rf --one-file-system "$CACHE" && log "purged $CACHE"
fi
exit 0
