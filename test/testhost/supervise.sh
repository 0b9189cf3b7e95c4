#!/usr/bin/env bash
# supervise.sh DIR — runs one test host; started detached (setsid) by up.sh.
#
# It first moves itself into the host's own cgroups (listed in DIR/cgroups), so
# that no two containers share nspawn's payload cgroup and down.sh can kill
# exactly one host's processes. Then it runs systemd-nspawn with DIR/nspawn.args,
# and boots the host again when its systemd asks for a reboot (nspawn exits
# 133), unless DIR/stop exists.
set -uo pipefail

dir=$1
name=$(basename "$dir")
for cg in $(cat "$dir/cgroups"); do echo $$ > "$cg/cgroup.procs"; done
mapfile -d '' args < "$dir/nspawn.args"
exec < /dev/null >> "$dir/console.log" 2>&1
while :; do
    echo "testhost: starting $name at $(date -Is)"
    systemd-nspawn "${args[@]}" &
    echo $! > "$dir/nspawn.pid"
    rc=0
    wait $! || rc=$?
    echo "testhost: systemd-nspawn for $name exited rc=$rc at $(date -Is)"
    [[ $rc == 133 && ! -e $dir/stop ]] || break
done
rm -f "$dir/nspawn.pid"
