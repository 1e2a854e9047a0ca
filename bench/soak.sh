#!/usr/bin/env bash
# bench/soak.sh — `make soak`: one `linerate serve` under repeated benches
# for SOAK_MINUTES (default 10), its resident memory and thread count
# recorded every SOAK_EVERY seconds (default 30), and the growth printed at
# the end. Runs as root in two network namespaces it creates and removes
# (also on Ctrl-C); every process runs under `timeout`, so nothing outlives
# it and no packet leaves the veth pair.
#
# Environment: SOAK_MINUTES=10 SOAK_EVERY=30 LINERATE=bin/linerate
#              SOAK_CSV=FILE (also write the samples as CSV)
set -euo pipefail

MINUTES=${SOAK_MINUTES:-10}
EVERY=${SOAK_EVERY:-30}
CSV=${SOAK_CSV:-}
die() { echo "soak.sh: $*" >&2; exit 2; }
[[ $MINUTES =~ ^[1-9][0-9]*$ && $MINUTES -le 600 ]] || die "SOAK_MINUTES=$MINUTES: want whole minutes, 1 to 600"
[[ $EVERY =~ ^[1-9][0-9]*$ ]] || die "SOAK_EVERY=$EVERY: want whole seconds"
[[ $(id -u) == 0 ]] || die "needs root (it creates network namespaces): try sudo make soak"
cd "$(dirname "$0")/.."
# shellcheck source=bench/netns.sh
source bench/netns.sh
LINERATE=${LINERATE:-bin/linerate}
[[ -x $LINERATE ]] || go build -o "$LINERATE" ./cmd/linerate

NS_C=linerate-soak-c-$$
NS_S=linerate-soak-s-$$
WORK=$(mktemp -d /tmp/linerate-soak.XXXXXX)
# The runs measured here stay out of the machine's run history.
export LINERATE_HISTORY_DIR=$WORK/history
SERVE=
cleanup() {
	[[ -n $SERVE ]] && kill "$SERVE" 2>/dev/null && wait "$SERVE" 2>/dev/null
	ip netns del "$NS_C" 2>/dev/null || true
	ip netns del "$NS_S" 2>/dev/null || true
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'echo; echo "soak.sh: interrupted" >&2; exit 130' INT TERM

netns_pair "$NS_C" "$NS_S" lrs0 lrs1 10.204.0.1 10.204.0.2

total=$((MINUTES * 60))
head -c 32 /dev/urandom | base64 >"$WORK/secret"
chmod 600 "$WORK/secret"
ip netns exec "$NS_S" timeout -k 5 $((total + 60)) "$LINERATE" serve --quiet --listen 10.204.0.2 \
	--token-file "$WORK/secret" 2>"$WORK/serve.log" &
SERVE=$!
sleep 1
pid=$(pgrep -n -P "$SERVE" linerate || echo "$SERVE")

sample() { # elapsed-seconds → "t rss_kib threads fds"
	local rss thr fds
	rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status")
	thr=$(awk '/^Threads:/ {print $2}' "/proc/$pid/status")
	fds=$(ls "/proc/$pid/fd" | wc -l)
	echo "$1 $rss $thr $fds"
}

# The benches: every engine and direction, threads from 1 to 16, some cut
# short with Ctrl-C (SIGINT) the way a user would.
benches=(
	"udp --duration 5 --warmup 0.5"
	"udp --duration 5 --threads 4 --ports 4 --bidir"
	"udp --duration 5 --reverse --rate 50kpps"
	"udp --duration 5 --engine ring --threads 2 --ports 2"
	"tcp --duration 5 --streams 4"
	"tcp --duration 5 --bidir --streams 2"
	"tcp --duration 5 --mss 88 --reverse"
	"udp --duration 5 --threads 16 --ports 16"
	"udp --duration 20 --interrupt"
)
start=$(date +%s)
next=0
runs=0
fails=0
echo "soak: $MINUTES min of benches against one serve (pid $pid), a sample every $EVERY s"
printf '%8s %10s %8s %6s\n' "seconds" "RSS KiB" "threads" "fds"
samples=()
while :; do
	now=$(( $(date +%s) - start ))
	if (( now >= next )); then
		s=$(sample "$now"); samples+=("$s")
		printf '%8s %10s %8s %6s\n' $s
		next=$((next + EVERY))
	fi
	(( now >= total )) && break
	b=${benches[$((runs % ${#benches[@]}))]}
	if [[ $b == *--interrupt* ]]; then
		ip netns exec "$NS_C" timeout -s INT 2 "$LINERATE" bench ${b/--interrupt/} --to 10.204.0.2 \
			--token-file "$WORK/secret" --json >/dev/null 2>&1 || true
	elif ! ip netns exec "$NS_C" timeout -k 5 60 "$LINERATE" bench $b --to 10.204.0.2 \
			--token-file "$WORK/secret" --json >/dev/null 2>"$WORK/bench.err"; then
		fails=$((fails + 1))
		echo "  bench $b failed: $(tail -1 "$WORK/bench.err")"
	fi
	runs=$((runs + 1))
done
s=$(sample $(( $(date +%s) - start ))); samples+=("$s")
first=(${samples[1]:-${samples[0]}})   # after the first bench, not a cold start
last=(${samples[-1]})
echo "soak: $runs benches ($fails failed) in $MINUTES min"
echo "soak: from t=${first[0]}s to t=${last[0]}s: RSS ${first[1]} → ${last[1]} KiB ($(( last[1] - first[1] )) KiB), threads ${first[2]} → ${last[2]}, fds ${first[3]} → ${last[3]}"
if [[ -n $CSV ]]; then
	{ echo "seconds,rss_kib,threads,fds"; for s in "${samples[@]}"; do echo "${s// /,}"; done; } >"$CSV"
fi
kill -0 "$SERVE" 2>/dev/null || { echo "soak.sh: serve died: $(tail -3 "$WORK/serve.log")" >&2; exit 1; }
