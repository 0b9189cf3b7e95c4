#!/bin/sh
# svcman.sh DIR VERB UNIT: a small service manager for the systemd_restart
# tests. It runs real processes and prints `systemctl show`-style state. How
# a unit behaves on restart is read from DIR/UNIT.mode:
#   ok       the old process is stopped and a new one started
#   dies     the new process dies at once; the manager keeps retrying
#   limit    the restart is refused: the start limit is hit
#   async    the restart returns at once; the new process replaces the old
#            one only on the second show after it (a manager that queues)
#   flap     the new process died once and the manager restarted it
#   missing  the unit does not exist
set -eu
dir=$1 verb=$2 unit=$3
s=$dir/$unit
mode=$(cat "$s.mode")

start() {
	sleep 300 </dev/null >/dev/null 2>&1 &
	echo $! >"$s.pid"
	date -u '+%a %Y-%m-%d %H:%M:%S UTC' >"$s.since"
}
stop() {
	if [ -f "$s.pid" ]; then
		kill "$(cat "$s.pid")" 2>/dev/null || true
		rm -f "$s.pid"
	fi
}

case $verb in
start)
	start
	;;
restart)
	echo restart >>"$s.log"
	case $mode in
	ok) stop; start ;;
	dies) stop; echo 0 >"$s.nrestarts" ;;
	limit)
		stop
		echo limit >"$s.state"
		echo "Job for $unit failed because start of the service was attempted too often." >&2
		exit 1
		;;
	async) : >"$s.pending" ;;
	flap) stop; start; echo 1 >"$s.nrestarts" ;;
	esac
	;;
show)
	if [ -f "$s.pending" ]; then
		if [ -s "$s.pending" ]; then
			stop; start; rm -f "$s.pending"
		else
			echo seen >"$s.pending"
		fi
	fi
	echo "Id=$unit"
	if [ "$mode" = missing ]; then
		printf 'LoadState=not-found\nActiveState=inactive\nSubState=dead\nMainPID=0\n'
		exit 0
	fi
	echo LoadState=loaded
	n=$(cat "$s.nrestarts" 2>/dev/null || echo 0)
	pid=$(cat "$s.pid" 2>/dev/null || echo 0)
	if [ -f "$s.state" ]; then
		printf 'ActiveState=failed\nSubState=failed\nResult=start-limit-hit\nMainPID=0\nNRestarts=%s\n' "$n"
	elif [ "$mode" = dies ] && [ "$pid" = 0 ]; then
		n=$((n + 1))
		echo $n >"$s.nrestarts"
		printf 'ActiveState=activating\nSubState=auto-restart\nResult=exit-code\nMainPID=0\nNRestarts=%s\nExecMainStatus=1\n' "$n"
	elif [ "$pid" != 0 ] && kill -0 "$pid" 2>/dev/null; then
		printf 'ActiveState=active\nSubState=running\nResult=success\nMainPID=%s\nNRestarts=%s\nActiveEnterTimestamp=%s\n' "$pid" "$n" "$(cat "$s.since")"
	else
		printf 'ActiveState=inactive\nSubState=dead\nResult=success\nMainPID=0\nNRestarts=%s\n' "$n"
	fi
	;;
esac
