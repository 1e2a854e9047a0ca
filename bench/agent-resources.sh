#!/usr/bin/env bash
# bench/agent-resources.sh — what one `linerate serve` uses under the tests
# an agent takes, to size a container's requests and limits
# (deploy/kubernetes/daemonset.yaml, docs/kubernetes.md): its resident
# memory at rest and its peak (VmHWM), the peak of its sockets' buffers
# (ss's skmem, which a container's memory cgroup is charged for under
# cgroup v2), its CPU seconds, threads and descriptors, per load: the
# heaviest single tests, then 8 clients at once (serve's --max-clients) as
# an agent of a mesh takes them. Runs as root in two network namespaces
# it creates and removes; every process runs under timeout.
#
# Environment: LINERATE=bin/linerate SECONDS_EACH=5
set -euo pipefail
[[ $(id -u) == 0 ]] || { echo "agent-resources.sh: needs root (network namespaces)" >&2; exit 2; }
cd "$(dirname "$0")/.."
# shellcheck source=bench/netns.sh
source bench/netns.sh
LINERATE=${LINERATE:-bin/linerate}
EACH=${SECONDS_EACH:-5}
[[ -x $LINERATE ]] || go build -o "$LINERATE" ./cmd/linerate

NS_C=linerate-res-c-$$
NS_S=linerate-res-s-$$
WORK=$(mktemp -d /tmp/linerate-res.XXXXXX)
export LINERATE_HISTORY_DIR=$WORK/history
SERVE=
cleanup() {
	[[ -n $SERVE ]] && kill "$SERVE" 2>/dev/null && wait "$SERVE" 2>/dev/null
	ip netns del "$NS_C" 2>/dev/null || true
	ip netns del "$NS_S" 2>/dev/null || true
	rm -rf "$WORK"
}
trap cleanup EXIT
netns_pair "$NS_C" "$NS_S" lrr0 lrr1 10.205.0.1 10.205.0.2

head -c 32 /dev/urandom | base64 >"$WORK/secret"
chmod 600 "$WORK/secret"
ip netns exec "$NS_S" timeout -k 5 1800 "$LINERATE" serve --quiet --listen 10.205.0.2 \
	--token-file "$WORK/secret" --web 10.205.0.2:9464 2>"$WORK/serve.log" &
SERVE=$!
sleep 1
pid=$(pgrep -n -P "$SERVE" linerate || echo "$SERVE")
clk=$(getconf CLK_TCK)
cpu() { awk -v c="$clk" '{print ($14 + $15) / c}' "/proc/$pid/stat"; }
kib() { awk -v k="$1" '$1 == k":" {print $2}' "/proc/$pid/status"; }
# The agent's sockets' memory: receive and send queues, forward
# allocation and queued writes, in KiB.
skmem() {
	ip netns exec "$NS_S" ss -tuanm 2>/dev/null | grep -o 'skmem:([^)]*)' |
		awk -F'[(),]' '{for (i = 2; i <= NF; i++) if ($i ~ /^(r|t|f|w)[0-9]/) s += substr($i, 2)} END {print int(s / 1024)}'
}

printf '%-44s %9s %9s %9s %8s %7s %5s\n' load "RSS KiB" "HWM KiB" "sock KiB" "CPU s" threads fds
row() { # name peak-socket-KiB cpu-before
	printf '%-44s %9s %9s %9s %8.2f %7s %5s\n' "$1" "$(kib VmRSS)" "$(kib VmHWM)" "$2" \
		"$(echo "$(cpu) - $3" | bc)" "$(kib Threads)" "$(ls "/proc/$pid/fd" | wc -l)"
}
row "at rest" "$(skmem)" "$(cpu)"

# run NAME N ARGS...: N clients at once, each `bench ARGS`, while the
# agent's socket memory is sampled; then a row.
run() {
	local name=$1 n=$2; shift 2
	local c0 peak=0 s pids=()
	c0=$(cpu)
	for ((i = 0; i < n; i++)); do
		ip netns exec "$NS_C" timeout -k 5 $((EACH + 60)) "$LINERATE" bench "$@" --to 10.205.0.2 \
			--token-file "$WORK/secret" --duration "$EACH" --json >/dev/null 2>>"$WORK/bench.err" &
		pids+=($!)
	done
	while kill -0 "${pids[@]}" 2>/dev/null; do
		s=$(skmem); ((s > peak)) && peak=$s
		sleep 0.2
	done
	wait "${pids[@]}" || echo "  $name: a bench failed: $(tail -1 "$WORK/bench.err")"
	row "$name" "$peak" "$c0"
}
run "udp, 4 threads × 4 ports, bidir" 1 udp --warmup 0.5 --threads 4 --ports 4 --bidir
run "udp 16 threads × 16 ports" 1 udp --warmup 0.5 --threads 16 --ports 16
run "udp 1472 B, reverse, 4 threads" 1 udp --warmup 0.5 --payload 1472 --threads 4 --ports 4 --reverse
run "tcp 128 streams, bidir" 1 tcp --warmup 0.5 --streams 128 --bidir
run "tcp 8 streams, reverse, copy" 1 tcp --warmup 0.5 --streams 8 --reverse --copy
run "rr tcp_crr, 16 streams" 1 rr --connect --streams 16
run "8 clients: tcp 4 streams bidir each" 8 tcp --warmup 0.5 --streams 4 --bidir
run "8 clients: udp 2 threads bidir each" 8 udp --warmup 0.5 --threads 2 --ports 2 --bidir
sleep 2
row "at rest after" "$(skmem)" "$(cpu)"
