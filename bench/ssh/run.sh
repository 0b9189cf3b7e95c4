#!/usr/bin/env bash
# bench/ssh/run.sh — runs the same 5 commands on N hosts (N = 1, 10, 50) with
# runbot (sshrun.Pool + FanOut, one connection per host), OpenSSH's ssh in a
# shell loop, parallel-ssh and Ansible ad-hoc, all against one throwaway
# sshd on loopback that is addressed as N distinct hosts (h1..hN in an ssh
# config), so every tool makes one connection per host name as it would
# against real machines. It prints wall times (median of REPS runs), the
# ratios, runbot's per-command cost against a bare session, and memory per
# connection.
#
# Needs root (sshd privilege separation) and the Debian packages
# openssh-server, openssh-client, pssh, ansible (ansible-core), python3.
#
#   bench/ssh/run.sh              # N = 1 10 50, 3 runs each
#   NS="1 10" REPS=1 bench/ssh/run.sh
#   TOOLS="runbot pssh" bench/ssh/run.sh
set -euo pipefail

NS=${NS:-"1 10 50"}
REPS=${REPS:-3}
TOOLS=${TOOLS:-"runbot ssh pssh ansible"}
# OpenSSH 9.2 defaults to the post-quantum sntrup761x25519 key exchange,
# which costs ~120 ms more per connection on a small VM; x/crypto and this
# sshd agree on curve25519-sha256. The OpenSSH-based tools use the same by
# default so that the comparison is about how the tools work, not which
# key exchange they pick. OPENSSH_KEX= (empty) keeps OpenSSH's default.
OPENSSH_KEX=${OPENSSH_KEX-curve25519-sha256}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CMDS=(
	"uname -r"
	"cat /proc/loadavg"
	"df -P /"
	"ps -e --no-headers | wc -l"
	"ls /etc | head -n 20"
)

need() {
	command -v "$1" >/dev/null 2>&1 || { echo "run.sh: $1 not found: apt-get install -y $2" >&2; exit 1; }
}
need /usr/sbin/sshd openssh-server
need ssh openssh-client
need ssh-keygen openssh-client
need python3 python3
need go golang
for t in $TOOLS; do
	case $t in
	pssh) need parallel-ssh pssh ;;
	ansible) need ansible ansible ;;
	esac
done

W=$(mktemp -d /tmp/runbot-ssh-bench.XXXXXX)
chmod 700 "$W"
SSHD_PID=
cleanup() {
	# Close any ssh control masters we opened, then our sshd, by pid/socket.
	local sock
	for sock in "$W"/cp/* "$W"/mux; do
		[ -S "$sock" ] && ssh -o ControlPath="$sock" -O exit dummy >/dev/null 2>&1 || true
	done
	[ -n "$SSHD_PID" ] && kill "$SSHD_PID" 2>/dev/null || true
	rm -rf "$W"
}
trap cleanup EXIT

# --- one sshd, addressed as many hosts -------------------------------------
ssh-keygen -q -t ed25519 -N '' -C bench -f "$W/host_key"
ssh-keygen -q -t ed25519 -N '' -C bench -f "$W/client_key"
cp "$W/client_key.pub" "$W/authorized_keys"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
USER_NAME=$(id -un)
cat >"$W/sshd_config" <<EOF
Port $PORT
ListenAddress 127.0.0.1
HostKey $W/host_key
PidFile $W/sshd.pid
AuthorizedKeysFile $W/authorized_keys
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
UsePAM no
StrictModes no
# N hosts are one server here: let 50 logins start at once, as 50 servers would.
MaxStartups 300
MaxSessions 64
# Keep the machine's ~/.bashrc (pyenv etc.) out of every tool's timings alike.
SetEnv SHLVL=1
LogLevel ERROR
# Real servers offer sftp; Ansible copies its modules over it.
Subsystem sftp internal-sftp
EOF
mkdir -p /run/sshd && chmod 0755 /run/sshd
/usr/sbin/sshd -D -e -f "$W/sshd_config" 2>"$W/sshd.log" &
SSHD_PID=$!
for _ in $(seq 100); do
	(exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
	sleep 0.05
done

echo "[127.0.0.1]:$PORT $(cut -d' ' -f1,2 "$W/host_key.pub")" >"$W/known_hosts"
MAXN=0
for n in $NS; do [ "$n" -gt "$MAXN" ] && MAXN=$n; done
: >"$W/ssh_config"
for i in $(seq "$MAXN"); do
	cat >>"$W/ssh_config" <<EOF
Host h$i
    HostName 127.0.0.1
    Port $PORT
    User $USER_NAME
    IdentityFile $W/client_key
    IdentitiesOnly yes
    UserKnownHostsFile $W/known_hosts
    StrictHostKeyChecking yes
    BatchMode yes
EOF
	if [ -n "$OPENSSH_KEX" ]; then echo "    KexAlgorithms $OPENSSH_KEX" >>"$W/ssh_config"; fi
done
for n in $NS; do
	seq -f 'h%g' 1 "$n" >"$W/hosts.$n"
	{
		echo "[all]"
		cat "$W/hosts.$n"
		echo "[all:vars]"
		echo "ansible_ssh_common_args='-F $W/ssh_config'"
		echo "ansible_python_interpreter=/usr/bin/python3"
	} >"$W/inventory.$n"
done

(cd "$ROOT" && go build -o "$W/ssh-bench" ./bench/ssh)

# --- the contenders ---------------------------------------------------------
run_runbot() {
	local n=$1
	# GNU time (if present) says how much of the wall time was runbot's own
	# CPU; the rest is sshd and the commands on the same cores.
	local timer=()
	[ -x /usr/bin/time ] && timer=(/usr/bin/time -f "cpu_user_s=%U cpu_sys_s=%S max_rss_kib=%M" -o "$W/runbot.time")
	"${timer[@]}" "$W/ssh-bench" -F "$W/ssh_config" -hosts "$(paste -sd, "$W/hosts.$n")" "${CMDS[@]}" >"$W/runbot.out"
	[ -s "$W/runbot.time" ] && cat "$W/runbot.time" >>"$W/runbot.out"
	return 0
}
run_ssh() {
	local n=$1 h c
	while read -r h; do
		# -n: ssh must not eat the host list this loop reads from stdin.
		for c in "${CMDS[@]}"; do ssh -n -F "$W/ssh_config" "$h" "$c" >/dev/null; done
	done <"$W/hosts.$n"
}
run_pssh() {
	local n=$1 c
	for c in "${CMDS[@]}"; do
		parallel-ssh -h "$W/hosts.$n" -p "$n" -t 120 -x "-F $W/ssh_config" "$c" >/dev/null
	done
}
run_ansible() {
	local n=$1 c sock
	# Ansible's defaults, including ssh ControlPersist between the five
	# invocations; each measured run starts without masters.
	export ANSIBLE_SSH_CONTROL_PATH_DIR="$W/cp" ANSIBLE_LOCAL_TEMP="$W/ansible-local" \
		ANSIBLE_REMOTE_TMP="$W/ansible-remote" ANSIBLE_NOCOLOR=1 ANSIBLE_DEPRECATION_WARNINGS=False
	for c in "${CMDS[@]}"; do
		ansible all -i "$W/inventory.$n" -f "$n" -m shell -a "$c" >/dev/null
	done
	for sock in "$W"/cp/*; do
		[ -S "$sock" ] && ssh -o ControlPath="$sock" -O exit dummy >/dev/null 2>&1 || true
	done
}

# measure TOOL N: median wall time in ms of REPS runs.
measure() {
	local tool=$1 n=$2 times=() s e
	for _ in $(seq "$REPS"); do
		s=$(date +%s%N)
		if ! "run_$tool" "$n" 2>>"$W/errors.log"; then
			echo "FAILED"
			return
		fi
		e=$(date +%s%N)
		times+=("$(((e - s) / 1000000))")
	done
	printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}
ms() { if [[ $1 =~ ^[0-9]+$ ]]; then echo "$1 ms"; else echo "$1"; fi; }
ratio() { # other/runbot, "x.y×"
	[[ $1 =~ ^[0-9]+$ && $2 =~ ^[0-9]+$ && $2 -gt 0 ]] && awk -v o="$1" -v r="$2" 'BEGIN {printf "%.1f×", o/r}' || echo "–"
}

echo "SSH benchmark: ${#CMDS[@]} commands per host, median of $REPS runs, $(date -u +%Y-%m-%dT%H:%MZ), OpenSSH kex: ${OPENSSH_KEX:-default}"
echo "machine: $(nproc) cores, $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo), $(free -g | awk '/Mem:/ {print $2}') GiB, $(uname -r)"
echo "versions: $(ssh -V 2>&1); $(parallel-ssh --version 2>&1 | head -n1 || true) (pssh); $(ansible --version 2>/dev/null | head -n1 || true); $(go version | cut -d' ' -f3)"
echo
declare -A RUNBOT_LAST=()
echo "| N hosts | runbot | ssh loop | parallel-ssh | ansible ad-hoc | ssh loop ÷ runbot | pssh ÷ runbot | ansible ÷ runbot |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|"
for n in $NS; do
	declare -A T=()
	for t in runbot ssh pssh ansible; do
		if [[ " $TOOLS " == *" $t "* ]]; then T[$t]=$(measure "$t" "$n"); else T[$t]="–"; fi
	done
	printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' "$n" \
		"$(ms "${T[runbot]}")" "$(ms "${T[ssh]}")" "$(ms "${T[pssh]}")" "$(ms "${T[ansible]}")" \
		"$(ratio "${T[ssh]}" "${T[runbot]}")" "$(ratio "${T[pssh]}" "${T[runbot]}")" "$(ratio "${T[ansible]}" "${T[runbot]}")"
	if [[ " $TOOLS " == *" runbot "* ]]; then RUNBOT_LAST[$n]=$(tr '\n' ' ' <"$W/runbot.out"); fi
done
echo
if [[ " $TOOLS " == *" runbot "* ]]; then
	for n in $NS; do echo "runbot N=$n: ${RUNBOT_LAST[$n]}"; done
fi

# --- per-command round trip on an established connection (N = 1) ----------
echo
echo "Per command on an established connection:"
(cd "$ROOT" && go test -run '^$' -bench 'BenchmarkRunVsRawSession$|BenchmarkSSHConnect$' -benchtime 300x ./remote/sshrun) |
	awk '/^BenchmarkRunVsRaw/ {printf "  runbot Run %s ms/op, bare x/crypto session %s ms/op: ratio %s\n", $7, $5, $9}
	     /^BenchmarkSSHConnect/ {printf "  runbot connect (TCP+kex+auth) %.2f ms/op, %s heap bytes per idle connection\n", $3/1e6, $5}'
# OpenSSH's own floor: a command over a ControlMaster connection (the client
# process still starts each time), and the RSS of that master per connection.
ssh -F "$W/ssh_config" -o ControlMaster=yes -o ControlPath="$W/mux" -o ControlPersist=yes -fN h1
s=$(date +%s%N)
for _ in $(seq 50); do ssh -F "$W/ssh_config" -o ControlPath="$W/mux" h1 true; done
e=$(date +%s%N)
echo "  openssh-mux 'ssh h1 true'     $(awk -v d=$((e - s)) 'BEGIN {printf "%.2f", d/50/1e6}') ms/op (client process start included)"
MASTER=$(ssh -o ControlPath="$W/mux" -O check dummy 2>&1 | sed -n 's/.*pid=\([0-9]*\).*/\1/p')
[ -n "$MASTER" ] && echo "  openssh client RSS per connection (mux master): $(ps -o rss= -p "$MASTER") KiB"
if [ -s "$W/errors.log" ]; then
	echo
	echo "errors (first 20 lines):"
	head -n 20 "$W/errors.log"
fi
