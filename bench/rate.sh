#!/usr/bin/env bash
# bench/rate.sh — how closely linerate holds an asked rate: `linerate bench
# udp --rate R` on a veth pair between two network namespaces this script
# creates and removes (also on failure or Ctrl-C), for each engine and each
# rate, printing the rate asked beside the rate sent (the measured window's
# sent packets per second from the result) and the error in percent.
#
# Packet rates use 64-byte frames; bit rates use 1518-byte frames (the
# Ethernet maximum, as a bulk transfer would) and count the whole frame,
# FCS included, as --rate does. Each engine is also run once as fast as it
# can at each frame size: a rate above 97 % of that ceiling (or of what
# the paced run sent, when that was more) is marked "beyond this machine"
# rather than judged against the ±1 % target.
#
# Environment:
#   ENGINES="socket ring xdp"   the engines (--engine) to run
#   PPS="10k 100k 1M"           packet rates, 64-byte frames
#   BPS="10M 100M 1G 10G"       bit rates, 1518-byte frames
#   DURATION=4                  measured seconds per run (after a 1 s warm-up)
#   TARGET=1                    the error (%) a rate within reach must stay under
#   LINERATE=PATH               the linerate binary (default bin/linerate, built if missing)
#   JSON=FILE                   also write every row as JSON
#
# Example: sudo DURATION=3 ENGINES=ring bash bench/rate.sh

set -euo pipefail

ENGINES=${ENGINES:-socket ring xdp}
PPS=${PPS:-10k 100k 1M}
BPS=${BPS:-10M 100M 1G 10G}
DURATION=${DURATION:-4}
TARGET=${TARGET:-1}
JSON=${JSON:-}

die() { echo "rate.sh: $*" >&2; exit 2; }
[[ $DURATION =~ ^[1-9][0-9]*$ && $DURATION -le 60 ]] || die "DURATION=$DURATION: want whole seconds, 1 to 60"
[[ $(id -u) == 0 ]] || die "needs root (it creates network namespaces): try sudo bash bench/rate.sh"
for e in $ENGINES; do [[ $e =~ ^(socket|ring|xdp|auto)$ ]] || die "ENGINES: unknown engine '$e' (socket, ring, xdp, auto)"; done
command -v jq >/dev/null || die "jq is not installed (make deps installs it)"

cd "$(dirname "$0")/.."
# shellcheck source=bench/netns.sh
source bench/netns.sh
LINERATE=${LINERATE:-bin/linerate}
if [[ ! -x $LINERATE ]]; then
	mkdir -p "$(dirname "$LINERATE")"
	go build -o "$LINERATE" ./cmd/linerate || die "could not build linerate"
fi

NS_TX=linerate-rate-tx-$$
NS_RX=linerate-rate-rx-$$
IP_RX=10.205.0.2
WORK=$(mktemp -d /tmp/linerate-rate.XXXXXX)
# The runs measured here stay out of the machine's run history.
export LINERATE_HISTORY_DIR=$WORK/history
SERVER=

cleanup() {
	[[ -z $SERVER ]] || { kill -- -"$SERVER" 2>/dev/null || true; wait "$SERVER" 2>/dev/null || true; }
	ip netns del "$NS_TX" 2>/dev/null || true
	ip netns del "$NS_RX" 2>/dev/null || true
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'echo; echo "rate.sh: interrupted" >&2; exit 130' INT TERM

# Two TX queues: AF_XDP binds a socket per queue, and linerate's default
# is two ports (a thread per CPU) on this 2-CPU machine.
netns_pair "$NS_TX" "$NS_RX" lrr0 lrr1 10.205.0.1 "$IP_RX" 2

# The server lives as long as the whole script may (each run is bounded).
RUNS=$(( $(wc -w <<<"$ENGINES") * ($(wc -w <<<"$PPS $BPS") + 2) ))
ip netns exec "$NS_RX" timeout -k 2 $((RUNS * (DURATION + 10) + 30)) "$LINERATE" serve --listen "$IP_RX" >"$WORK/serve.log" 2>&1 &
SERVER=$!
for _ in $(seq 50); do
	[[ -n $(ip netns exec "$NS_RX" ss -Hlnt "sport = :7557" 2>/dev/null) ]] && break
	sleep 0.1
done

# run ENGINE RATE SIZE: prints "engine sent_pps received_pps lost" of one
# run, or fails.
run() {
	local out=$WORK/result.json
	rm -f "$out"
	ip netns exec "$NS_TX" timeout -k 2 $((DURATION + 20)) "$LINERATE" bench udp --to "$IP_RX" --engine "$1" \
		--rate "$2" --size "$3" --idle 0s --warmup 1s --duration "${DURATION}s" --json --out "$out" \
		>"$WORK/client.log" 2>&1 || { echo "    $1 --rate $2 --size $3 failed: $(tail -n 2 "$WORK/client.log" | tr '\n' ' ')" >&2; return 1; }
	jq -r '[.engine, .summary.sent_pps, .summary.received_pps, .summary.lost_packets] | map(tostring) | join(" ")' "$out"
}

# si VALUE: the number behind a k, M or G.
si() { awk -v v="$1" 'BEGIN { m = 1; u = substr(v, length(v)); if (u == "k") m = 1e3; else if (u == "M") m = 1e6; else if (u == "G") m = 1e9;
	if (m > 1) v = substr(v, 1, length(v) - 1); printf "%.0f\n", v * m }'; }

echo "linerate rate accuracy: $(nproc) CPUs, kernel $(uname -r), veth, ${DURATION}s measured per run (+1s warm-up)"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A MAX
ROWS=()
for e in $ENGINES; do
	for size in 64 1518; do
		if r=$(run "$e" 0 "$size"); then
			read -r ran sent _ _ <<<"$r"
			MAX[$e,$size]=$sent
			printf '  %-6s as fast as possible, %4d B: %.0f pps (%s)\n' "$e" "$size" "$sent" "$ran"
		fi
	done
	for spec in $(for p in $PPS; do echo "${p}pps:64"; done; for b in $BPS; do echo "${b}bps:1518"; done); do
		rate=${spec%%:*} size=${spec##*:}
		r=$(run "$e" "$rate" "$size") || { ROWS+=("$e $rate $size failed"); continue; }
		read -r ran sent recv lost <<<"$r"
		ROWS+=("$e $rate $size $ran $sent $recv $lost")
		printf '  %-6s %-9s %4d B: sent %.0f pps\n' "$e" "$rate" "$size" "$sent"
	done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

echo
printf '%-7s %-10s %5s %14s %14s %9s  %s\n' engine asked frame "asked (unit)" "sent (unit)" "error %" verdict
[[ -z $JSON ]] || echo "[" >"$JSON"
first=1
for row in "${ROWS[@]}"; do
	read -r e rate size ran sent recv lost <<<"$row"
	if [[ $ran == failed ]]; then
		printf '%-7s %-10s %5s %14s\n' "$e" "$rate" "$size" failed
		continue
	fi
	unit=${rate: -3}
	asked=$(si "${rate%???}")
	max=${MAX[$e,$size]:-}
	line=$(awk -v asked="$asked" -v unit="$unit" -v size="$size" -v sent="$sent" -v max="$max" -v tgt="$TARGET" 'BEGIN {
		got = (unit == "pps") ? sent : sent * size * 8
		askpps = (unit == "pps") ? asked : asked / (size * 8)
		err = (got - asked) / asked * 100
		# The ceiling is one run: a paced run may beat it; the higher counts.
		if (max == "" || sent > max) max = sent
		if (askpps > 0.97 * max) v = sprintf("beyond this machine (%.0f pps at most): as fast as possible", max)
		else if (err <= tgt && err >= -tgt) v = "within " tgt " %"
		else v = "MISSED"
		printf "%.0f %.0f %+.2f %s", asked, got, err, v }')
	read -r a g err verdict <<<"$line"
	printf '%-7s %-10s %5s %14s %14s %9s  %s\n' "$e" "$rate" "$size" "$a" "$g" "$err" "$verdict"
	if [[ -n $JSON ]]; then
		[[ $first == 1 ]] || echo "," >>"$JSON"
		first=0
		printf '  {"engine": "%s", "ran": "%s", "asked": "%s", "frame": %s, "asked_value": %s, "sent_value": %s, "error_pct": %s, "sent_pps": %s, "received_pps": %s, "lost": %s, "max_pps": %s, "verdict": "%s"}' \
			"$e" "$ran" "$rate" "$size" "$a" "$g" "$err" "$sent" "$recv" "$lost" "${max:-null}" "$verdict" >>"$JSON"
	fi
done
[[ -z $JSON ]] || { printf '\n]\n' >>"$JSON"; echo "wrote $JSON"; }
