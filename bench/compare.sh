#!/usr/bin/env bash
# bench/compare.sh — linerate against iperf3, sockperf and trafgen, side by
# side, in one run, on a veth pair between two network namespaces this script
# creates and removes (also on Ctrl-C). Run as root; `make bench` calls it.
#
# Every tool is measured the same way, from the receiving namespace's kernel
# counters over the same window (the first WARM seconds of each run are left
# out):
#   UDP  received pps = Udp InDatagrams (/proc/net/snmp), which counts the
#        datagrams an application read from a socket;
#   TCP  Gb/s         = rx_bytes of the receiving veth (/proc/net/dev);
#   XDP  rows         = rx_packets of the receiving veth (an XDP drop program
#        keeps them from any socket).
# UDP Gb/s is pps × 64-byte frames × 8. The tools alternate within each
# round, in reverse order in even rounds (each tool runs after a different
# one); the table shows each one's median over the rounds.
#
# CPU, measured the same way for every tool over the same window: the CPU
# time (user + system, /proc/PID/stat, children included) of the sending
# process group (tx) and of the receiving one (rx: the server, or the sink
# trafgen and the XDP rows send into), and the whole machine's busy time
# (box, /proc/stat: both ends, softirq work in ksoftirqd included, which no
# process is charged for), each per million packets and per gigabit counted
# in the window. Below the table, the CPU cost as linerate (its result's
# summary) and iperf3 (-J cpu_utilization_percent) report it themselves.
#
# The sending veth uses TXQ TX queues (2 by default: ethtool -L tx 2; veth
# starts with 1): the AF_XDP engine binds one socket per queue, up to one
# per port. TXQ=1 is a single-queue NIC, where one AF_XDP socket sends
# every port's flows (e.g. TXQ=1 TOOLS="linerate-default iperf3 trafgen").
#
# Environment:
#   ROUNDS=3        rounds (each runs every tool once)
#   DURATION=5      measured seconds per run
#   WARM=1          seconds of each run before the window
#   TOOLS="..."     a subset of: linerate-socket linerate-ring linerate-afxdp iperf3
#                   sockperf trafgen trafgen-xdp linerate-ring-xdp linerate-afxdp-xdp
#                   linerate-default, and for N in 1 4 8 16 streams:
#                   linerate-tcpN iperf3-tcpNz (both sendfile), and
#                   linerate-tcpNcopy iperf3-tcpN iperf2-tcpN nuttcp-tcpN
#                   (all copying from user memory) (default: all)
#   JSON=FILE       also write the medians and every round as JSON
#   TXQ=2           TX queues of the sending veth, 1 to 8
#   LINERATE=PATH   the linerate binary (default bin/linerate, built if missing)
#   SINK=PATH       the bench/sink binary (default: built into a temporary dir)
#   LINERATE_UDP_FLAGS="--threads 2 --ports 2"
#                   linerate's UDP flags into a socket receiver (both CPUs,
#                   as trafgen -P 2; trafgen and its sink use 2 ports too)
#
# Example: sudo ROUNDS=5 DURATION=3 JSON=/tmp/bench.json bash bench/compare.sh

set -euo pipefail

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5}
WARM=${WARM:-1}
TXQ=${TXQ:-2}
JSON=${JSON:-}
LINERATE_UDP_FLAGS=${LINERATE_UDP_FLAGS:---threads 2 --ports 2}
ALL_TOOLS="linerate-default linerate-socket linerate-ring linerate-afxdp iperf3 sockperf trafgen trafgen-xdp linerate-ring-xdp linerate-afxdp-xdp linerate-tcp1 iperf3-tcp1z linerate-tcp1copy iperf3-tcp1 iperf2-tcp1 nuttcp-tcp1 linerate-tcp4 iperf3-tcp4z linerate-tcp4copy iperf3-tcp4 iperf2-tcp4 nuttcp-tcp4 linerate-tcp8 iperf3-tcp8z linerate-tcp8copy iperf3-tcp8 iperf2-tcp8 nuttcp-tcp8 linerate-tcp16 iperf3-tcp16z linerate-tcp16copy iperf3-tcp16 iperf2-tcp16 nuttcp-tcp16"
TOOLS=${TOOLS:-$ALL_TOOLS}

die() { echo "compare.sh: $*" >&2; exit 2; }

[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "ROUNDS=$ROUNDS: want a whole number of rounds ≥ 1"
[[ $DURATION =~ ^[1-9][0-9]*$ && $DURATION -le 600 ]] || die "DURATION=$DURATION: want whole seconds, 1 to 600"
[[ $WARM =~ ^[0-9]+$ && $WARM -le 60 ]] || die "WARM=$WARM: want whole seconds, 0 to 60"
[[ $TXQ =~ ^[1-8]$ ]] || die "TXQ=$TXQ: want a number of TX queues, 1 to 8"
for t in $TOOLS; do
	[[ " $ALL_TOOLS " == *" $t "* ]] || die "TOOLS: unknown tool '$t' (known: $ALL_TOOLS)"
done
[[ $(id -u) == 0 ]] || die "needs root (it creates network namespaces): try sudo bash bench/compare.sh"

cd "$(dirname "$0")/.."
# shellcheck source=bench/netns.sh
source bench/netns.sh
LINERATE=${LINERATE:-bin/linerate}

# ---- the lab -------------------------------------------------------------

NS_TX=linerate-bench-tx-$$
NS_RX=linerate-bench-rx-$$
IF_TX=lrb0
IF_RX=lrb1
IP_TX=10.203.0.1
IP_RX=10.203.0.2
UDP_PORT=5300
WORK=$(mktemp -d /tmp/linerate-bench.XXXXXX)
# The runs measured here stay out of the machine's run history.
export LINERATE_HISTORY_DIR=$WORK/history
PIDS=()

cleanup() {
	local pid
	for pid in "${PIDS[@]}"; do kill -- -"$pid" 2>/dev/null || true; done
	for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
	for pid in "${PIDS[@]}"; do kill -KILL -- -"$pid" 2>/dev/null || true; done
	ip netns del "$NS_TX" 2>/dev/null || true
	ip netns del "$NS_RX" 2>/dev/null || true
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'echo; echo "compare.sh: interrupted" >&2; exit 130' INT TERM

need() { command -v "$1" >/dev/null || die "$1 is not installed (make deps installs it)"; }
need ip
need timeout
CLK_TCK=$(getconf CLK_TCK)

if [[ ! -x $LINERATE ]]; then
	echo "building $LINERATE"
	mkdir -p "$(dirname "$LINERATE")"
	go build -o "$LINERATE" ./cmd/linerate || echo "compare.sh: could not build linerate; its rows are skipped" >&2
fi
if [[ -z ${SINK:-} ]]; then
	SINK=$WORK/sink
	go build -o "$SINK" ./bench/sink || { echo "compare.sh: could not build bench/sink; trafgen and XDP rows are skipped" >&2; SINK=; }
fi

# One AF_XDP socket per TX queue: two, for linerate's --ports 2.
netns_pair "$NS_TX" "$NS_RX" "$IF_TX" "$IF_RX" "$IP_TX" "$IP_RX" "$TXQ"
MAC_TX=$(ip netns exec "$NS_TX" cat "/sys/class/net/$IF_TX/address")
MAC_RX=$(ip netns exec "$NS_RX" cat "/sys/class/net/$IF_RX/address")

cat >"$WORK/trafgen.cfg" <<EOF
# 64-byte Ethernet frames (60 bytes + FCS): IPv4, UDP, 18 bytes of payload,
# alternating between two destination ports like linerate's --ports 2.
{
  eth(da=$MAC_RX, sa=$MAC_TX),
  ipv4(sa=$IP_TX, da=$IP_RX, ttl=64, df),
  udp(sp=9, dp=dinc($UDP_PORT, $((UDP_PORT + 1)))),
  fill(0x00, 18)
}
EOF

# ---- running things ------------------------------------------------------

# bg NS LIMIT LOG CMD... starts CMD in NS, killed after LIMIT seconds at the
# latest; its pid is in $BG. `ip netns exec` execs timeout, which makes
# itself the leader of a new process group: the group (its pid) holds
# everything the command forks, so nothing it leaves behind survives stop.
bg() {
	local ns=$1 limit=$2 log=$3
	shift 3
	ip netns exec "$ns" timeout -k 2 "$limit" "$@" >"$log" 2>&1 &
	BG=$!
	PIDS+=("$BG")
}

# forget PID: drops a reaped process from the list cleanup kills, after
# killing whatever is left in its process group (a child that outlived its
# parent, like a trafgen worker whose parent failed).
forget() {
	kill -KILL -- -"$1" 2>/dev/null || true
	local keep=() p
	for p in "${PIDS[@]}"; do [[ $p == "$1" ]] || keep+=("$p"); done
	PIDS=("${keep[@]}")
}

# stop PID: ends a process this script started, and its group, and reaps it.
stop() {
	kill -- -"$1" 2>/dev/null || kill "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
	forget "$1"
}

# listening NS PROTO PORT: waits (≤ 5 s) until something listens there.
listening() {
	local ns=$1 proto=$2 port=$3 i
	for i in $(seq 50); do
		if [[ -n $(ip netns exec "$ns" ss -Hln"${proto:0:1}" "sport = :$port" 2>/dev/null) ]]; then
			return 0
		fi
		sleep 0.1
	done
	return 1
}

# counters: "seconds udp_in_datagrams rx_packets rx_bytes" in the receiving
# namespace, now.
counters() {
	local t=$EPOCHREALTIME
	ip netns exec "$NS_RX" awk -v t="$t" -v ifc="$IF_RX" '
		FILENAME ~ /snmp$/ && $1 == "Udp:" && $2 ~ /^[0-9]+$/ { udp = $2 }
		FILENAME ~ /dev$/ && $1 ~ "^"ifc":" {
			sub("^ *"ifc":", ""); split($0, f, " "); pk = f[2]; by = f[1]
		}
		END { print t, udp, pk, by }' /proc/net/snmp /proc/net/dev
}

# cpu "TX_GROUPS" "RX_GROUPS": "tx rx box", CPU ticks so far of the
# processes in the sending and in the receiving process groups (utime +
# stime + their reaped children's, /proc/PID/stat fields 14-17), and the
# machine's busy ticks (/proc/stat: all but idle and iowait).
cpu() {
	local files=(/proc/[0-9]*/stat)
	# getline, not awk's own file loop: a process that ends between the
	# glob and the read is a -1 here, not a fatal read error.
	awk -v tx=" $1 " -v rx=" $2 " 'BEGIN {
		while ((getline l < "/proc/stat") > 0)
			if (l ~ /^cpu /) { split(l, c, " "); box = c[2] + c[3] + c[4] + c[7] + c[8] + c[9] }
		for (i = 1; i < ARGC; i++) {
			if ((getline l < ARGV[i]) > 0) {
				sub(/^.*\) /, "", l); split(l, f, " ")
				if (index(tx, " " f[3] " ")) a += f[12] + f[13] + f[14] + f[15]
				if (index(rx, " " f[3] " ")) b += f[12] + f[13] + f[14] + f[15]
			}
			close(ARGV[i])
		}
		print a + 0, b + 0, box + 0
	}' "${files[@]}"
}

# measure KIND "TX_GROUPS" "RX_GROUPS": sleeps WARM, reads the counters,
# sleeps DURATION, reads them again and prints "pps gbps" for KIND udp
# (InDatagrams, 64-byte frames), tcp (rx bytes) or link (rx packets, 64-byte
# frames), then the CPU-seconds per million packets of tx, rx and box, then
# the same per gigabit.
measure() {
	local kind=$1 a b ca cb
	sleep "$WARM"
	a=$(counters)
	ca=$(cpu "$2" "$3")
	sleep "$DURATION"
	b=$(counters)
	cb=$(cpu "$2" "$3")
	awk -v kind="$kind" -v a="$a" -v b="$b" -v ca="$ca" -v cb="$cb" -v hz="$CLK_TCK" 'BEGIN {
		split(a, x, " "); split(b, y, " "); dt = y[1] - x[1]
		if (kind == "udp") { pps = (y[2] - x[2]) / dt; gbps = pps * 64 * 8 / 1e9 }
		else if (kind == "link") { pps = (y[3] - x[3]) / dt; gbps = pps * 64 * 8 / 1e9 }
		else { pps = (y[3] - x[3]) / dt; gbps = (y[4] - x[4]) * 8 / dt / 1e9 }
		split(ca, p, " "); split(cb, q, " ")
		mpkt = pps * dt / 1e6; gbit = gbps * dt
		printf "%.0f %.3f", pps, gbps
		ok = p[3] > 0 && q[3] >= p[3]
		for (i = 1; i <= 3; i++) printf " %s", (ok && mpkt > 0) ? sprintf("%.3f", (q[i] - p[i]) / hz / mpkt) : "-"
		for (i = 1; i <= 3; i++) printf " %s", (ok && gbit > 0) ? sprintf("%.3f", (q[i] - p[i]) / hz / gbit) : "-"
		printf "\n" }'
}

# finish SENDER_PID LOG: waits for the sender; on failure prints its log's
# tail and returns 1.
finish() {
	local pid=$1 log=$2 rc=0
	wait "$pid" || rc=$?
	forget "$pid"
	if [[ $rc != 0 ]]; then
		echo "    failed (exit $rc): $(tail -n 3 "$log" | tr '\n' ' ')" >&2
		return 1
	fi
}

TOTAL=$((WARM + DURATION + 1))       # each sender's own duration
LIMIT=$((TOTAL + 10))                # hard bound on every process

linerate_serve() {
	bg "$NS_RX" $((LIMIT + 5)) "$WORK/serve.log" "$LINERATE" serve --listen "$IP_RX"
	SERVER=$BG
	listening "$NS_RX" tcp 7557 || { echo "    linerate serve did not start: $(tail -n 3 "$WORK/serve.log")" >&2; stop "$SERVER"; return 1; }
}

# run_TOOL sets RESULT to "pps gbps", or fails. They run in this shell (not
# in $(...)) so that every process they start is in PIDS for cleanup.
# Into a socket receiver linerate uses both CPUs, as trafgen -P 2 does: two
# sender threads, two flows (ports), two receiver threads. Into XDP drop
# one thread, as trafgen -P 1.
run_linerate-socket() { run_linerate_udp socket udp "$LINERATE_UDP_FLAGS"; }
run_linerate-ring() { run_linerate_udp ring udp "$LINERATE_UDP_FLAGS"; }
run_linerate-ring-xdp() { run_linerate_udp ring link "--threads 1 --ports 1" xdp; }
run_linerate-afxdp() { run_linerate_udp xdp udp "$LINERATE_UDP_FLAGS"; }
run_linerate-afxdp-xdp() { run_linerate_udp xdp link "--threads 1 --ports 1" xdp; }

# linerate_self FILE: SELF, linerate's own "client server" CPU-seconds per
# Mpkt and per Gbit from its result's summary, or nothing without jq.
linerate_self() {
	SELF=
	command -v jq >/dev/null && [[ -s $1 ]] || return 0
	SELF=$(jq -r '.summary | [.cpu_seconds_per_mpkt.client, .cpu_seconds_per_mpkt.server,
		.cpu_seconds_per_gbit.client, .cpu_seconds_per_gbit.server] | map(if . == null then "-" else (. * 1000 | round / 1000) end) | join(" ")' "$1" 2>/dev/null) || SELF=
}

# What a user types: bench udp with no flags but the target (and the
# script's timing), into serve.
run_linerate-default() {
	local out rc=0
	linerate_serve || return 1
	rm -f "$WORK/result.json"
	bg "$NS_TX" "$LIMIT" "$WORK/client.log" "$LINERATE" bench udp --to "$IP_RX" --idle 0s --warmup 0s --duration "${TOTAL}s" --json --out "$WORK/result.json"
	local client=$BG
	out=$(measure udp "$client" "$SERVER")
	finish "$client" "$WORK/client.log" || rc=1
	stop "$SERVER"
	linerate_self "$WORK/result.json"
	[[ $rc == 0 ]] && RESULT=$out
}

run_linerate_udp() {
	local engine=$1 kind=$2 flags=$3 xdp=${4:-} out rc=0 sink=
	linerate_serve || return 1
	if [[ -n $xdp ]]; then
		bg "$NS_RX" "$LIMIT" "$WORK/sink.log" "$SINK" -xdp-drop "$IF_RX" -duration "${LIMIT}s"
		sink=$BG
		sleep 0.5
	fi
	rm -f "$WORK/result.json"
	# shellcheck disable=SC2086 # flags are words
	bg "$NS_TX" "$LIMIT" "$WORK/client.log" "$LINERATE" bench udp --to "$IP_RX" --size 64 \
		--engine "$engine" $flags --idle 0s --warmup 0s --duration "${TOTAL}s" --json --out "$WORK/result.json"
	local client=$BG
	out=$(measure "$kind" "$client" "$SERVER $sink")
	finish "$client" "$WORK/client.log" || rc=1
	[[ -z $sink ]] || stop "$sink"
	stop "$SERVER"
	linerate_self "$WORK/result.json"
	[[ $rc == 0 ]] && RESULT=$out
}

run_iperf3() {
	local out rc=0
	bg "$NS_RX" "$LIMIT" "$WORK/server.log" iperf3 -s -1 -B "$IP_RX" -p 5201
	local server=$BG
	listening "$NS_RX" tcp 5201 || { stop "$server"; echo "    iperf3 -s did not start" >&2; return 1; }
	bg "$NS_TX" "$LIMIT" "$WORK/client.log" iperf3 -c "$IP_RX" -p 5201 -u -b 0 -l 18 -t "$TOTAL" -J
	local client=$BG
	out=$(measure udp "$client" "$server")
	finish "$client" "$WORK/client.log" || rc=1
	stop "$server"
	iperf3_self "$WORK/client.log" udp
	[[ $rc == 0 ]] && RESULT=$out
}

# iperf3_self LOG KIND: SELF, iperf3's own "host remote" CPU-seconds per
# Mpkt and per Gbit: -J's cpu_utilization_percent (host_total, remote_total:
# percent of one CPU over the test) × the test's seconds, over the packets
# it sent (UDP; TCP does not count packets: "-") and the gigabits.
iperf3_self() {
	SELF=
	command -v jq >/dev/null && [[ -s $1 ]] || return 0
	SELF=$(jq -r --arg kind "$2" '
		def per($x; $n): if $n > 0 then ($x / $n * 1000 | round / 1000 | tostring) else "-" end;
		.end as $e |
		(if $kind == "udp" then $e.sum else $e.sum_received end) as $s |
		($s.seconds * $e.cpu_utilization_percent.host_total / 100) as $host |
		($s.seconds * $e.cpu_utilization_percent.remote_total / 100) as $remote |
		($s.bytes * 8 / 1e9) as $gbit |
		(if $kind == "udp" then $s.packets / 1e6 else 0 end) as $mpkt |
		[per($host; $mpkt), per($remote; $mpkt), per($host; $gbit), per($remote; $gbit)] | join(" ")' "$1" 2>/dev/null) || SELF=
	return 0
}

run_sockperf() {
	local out rc=0
	bg "$NS_RX" "$LIMIT" "$WORK/server.log" sockperf server -i "$IP_RX" -p 11111
	local server=$BG
	listening "$NS_RX" udp 11111 || { stop "$server"; echo "    sockperf server did not start" >&2; return 1; }
	bg "$NS_TX" "$LIMIT" "$WORK/client.log" sockperf throughput -i "$IP_RX" -p 11111 -m 18 -t "$TOTAL"
	local client=$BG
	out=$(measure udp "$client" "$server")
	finish "$client" "$WORK/client.log" || rc=1
	stop "$server"
	[[ $rc == 0 ]] && RESULT=$out
}

run_trafgen() { run_trafgen_into udp 2; }
# One process into XDP: with two, trafgen exits on the EAGAIN that a veth in
# XDP (NAPI) mode returns when its ring is full ("Flushing TX_RING failed").
run_trafgen-xdp() { run_trafgen_into link 1; }

# trafgen has no receiver and no duration: it sends into bench/sink (sockets
# or XDP drop) and is stopped with SIGINT, which it handles by printing its
# statistics and exiting.
run_trafgen_into() {
	local kind=$1 procs=$2 out rc=0
	if [[ $kind == udp ]]; then
		bg "$NS_RX" "$LIMIT" "$WORK/sink.log" "$SINK" -listen "$IP_RX:$UDP_PORT" -ports 2 -threads 2 -duration "${LIMIT}s"
		local sink=$BG
		listening "$NS_RX" udp "$UDP_PORT" || { stop "$sink"; echo "    sink did not start" >&2; return 1; }
	else
		bg "$NS_RX" "$LIMIT" "$WORK/sink.log" "$SINK" -xdp-drop "$IF_RX" -duration "${LIMIT}s"
		local sink=$BG
		sleep 0.5
	fi
	# --no-sock-mem and -Q: leave the machine's socket memory and IRQ
	# affinity alone.
	ip netns exec "$NS_TX" timeout -s INT -k 2 "$TOTAL" trafgen -o "$IF_TX" -i "$WORK/trafgen.cfg" \
		-P "$procs" --no-sock-mem -Q >"$WORK/client.log" 2>&1 &
	local client=$!
	PIDS+=("$client")
	out=$(measure "$kind" "$client" "$sink")
	# trafgen must still be sending when the window closes; how it exits
	# when stopped does not matter (it may fail to flush its ring).
	if ! kill -0 "$client" 2>/dev/null; then
		echo "    trafgen stopped early: $(tail -n 3 "$WORK/client.log" | tr '\n' ' ')" >&2
		rc=1
	fi
	wait "$client" || true
	forget "$client"
	stop "$sink"
	if [[ $kind == link ]] && grep -q unavailable "$WORK/sink.log"; then
		echo "    $(cat "$WORK/sink.log")" >&2
		rc=1
	fi
	[[ $rc == 0 ]] && RESULT=$out
}

for n in 1 4 8 16; do
	eval "run_linerate-tcp$n() { run_linerate_tcp $n; }"
	eval "run_linerate-tcp${n}copy() { run_linerate_tcp $n --copy; }"
	eval "run_iperf3-tcp$n() { run_iperf3_tcp $n; }"
	eval "run_iperf3-tcp${n}z() { run_iperf3_tcp $n -Z; }"
	eval "run_iperf2-tcp$n() { run_iperf2_tcp $n; }"
	eval "run_nuttcp-tcp$n() { run_nuttcp_tcp $n; }"
done
# run_linerate_tcp STREAMS [FLAG...]
run_linerate_tcp() {
	local out rc=0
	linerate_serve || return 1
	rm -f "$WORK/result.json"
	bg "$NS_TX" "$LIMIT" "$WORK/client.log" "$LINERATE" bench tcp --to "$IP_RX" --streams "$1" --idle 0s --warmup 0s \
		--duration "${TOTAL}s" --json --out "$WORK/result.json" "${@:2}"
	local client=$BG
	out=$(measure tcp "$client" "$SERVER")
	finish "$client" "$WORK/client.log" || rc=1
	stop "$SERVER"
	linerate_self "$WORK/result.json"
	[[ $rc == 0 ]] && RESULT=$out
}

# run_iperf3_tcp STREAMS [FLAG...]
run_iperf3_tcp() {
	local out rc=0
	bg "$NS_RX" "$LIMIT" "$WORK/server.log" iperf3 -s -1 -B "$IP_RX" -p 5201
	local server=$BG
	listening "$NS_RX" tcp 5201 || { stop "$server"; echo "    iperf3 -s did not start" >&2; return 1; }
	bg "$NS_TX" "$LIMIT" "$WORK/client.log" iperf3 -c "$IP_RX" -p 5201 -P "$1" -t "$TOTAL" -J "${@:2}"
	local client=$BG
	out=$(measure tcp "$client" "$server")
	finish "$client" "$WORK/client.log" || rc=1
	stop "$server"
	iperf3_self "$WORK/client.log" tcp
	[[ $rc == 0 ]] && RESULT=$out
}

# run_iperf2_tcp STREAMS: iperf 2 (Debian's iperf, 2.1), which writes from
# user memory; it reports no CPU figures of its own.
run_iperf2_tcp() {
	local out rc=0
	bg "$NS_RX" "$LIMIT" "$WORK/server.log" iperf -s -B "$IP_RX" -p 5001
	local server=$BG
	listening "$NS_RX" tcp 5001 || { stop "$server"; echo "    iperf -s did not start" >&2; return 1; }
	bg "$NS_TX" "$LIMIT" "$WORK/client.log" iperf -c "$IP_RX" -p 5001 -P "$1" -t "$TOTAL"
	local client=$BG
	out=$(measure tcp "$client" "$server")
	finish "$client" "$WORK/client.log" || rc=1
	stop "$server"
	[[ $rc == 0 ]] && RESULT=$out
}

# run_nuttcp_tcp STREAMS: nuttcp's one-shot server (-1, --nofork: its CPU
# is counted in its group) and its client
# (-t, -N streams on consecutive data ports), which writes from user memory.
run_nuttcp_tcp() {
	local out rc=0
	bg "$NS_RX" "$LIMIT" "$WORK/server.log" nuttcp -1 --nofork -P 5100 -p 5101
	local server=$BG
	listening "$NS_RX" tcp 5100 || { stop "$server"; echo "    nuttcp -1 did not start" >&2; return 1; }
	bg "$NS_TX" "$LIMIT" "$WORK/client.log" nuttcp -t -N "$1" -T "$TOTAL" -P 5100 -p 5101 "$IP_RX"
	local client=$BG
	out=$(measure tcp "$client" "$server")
	finish "$client" "$WORK/client.log" || rc=1
	stop "$server"
	[[ $rc == 0 ]] && RESULT=$out
}

# ---- which tools can run -------------------------------------------------

declare -A SKIP
for t in $TOOLS; do
	case $t in
	linerate-*)
		sub=udp
		[[ $t == linerate-tcp* ]] && sub=tcp
		if ! "$LINERATE" bench "$sub" --help >/dev/null 2>&1; then
			SKIP[$t]="$LINERATE has no 'bench $sub'"
		elif [[ $t == linerate-ring* || $t == linerate-afxdp* ]] && ! "$LINERATE" bench udp --help 2>&1 | grep -q -- --engine; then
			SKIP[$t]="$LINERATE bench udp has no --engine"
		elif [[ $t == linerate-afxdp* ]] && ! "$LINERATE" bench udp --help 2>&1 | grep -q -- 'xdp (AF_XDP'; then
			SKIP[$t]="$LINERATE bench udp has no --engine xdp"
		fi
		;;
	iperf3*) command -v iperf3 >/dev/null || SKIP[$t]="iperf3 is not installed" ;;
	iperf2*) command -v iperf >/dev/null || SKIP[$t]="iperf (2) is not installed" ;;
	nuttcp*) command -v nuttcp >/dev/null || SKIP[$t]="nuttcp is not installed" ;;
	sockperf) command -v sockperf >/dev/null || SKIP[$t]="sockperf is not installed" ;;
	trafgen*) command -v trafgen >/dev/null || SKIP[$t]="trafgen (netsniff-ng) is not installed" ;;
	esac
	if [[ -z $SINK && ($t == trafgen* || $t == *-xdp) ]]; then
		SKIP[$t]="bench/sink did not build"
	fi
done

# ---- the rounds ----------------------------------------------------------

echo "linerate side-by-side benchmark: $(nproc) CPUs, kernel $(uname -r), veth $NS_TX/$IF_TX ($TXQ TX queues) → $NS_RX/$IF_RX"
echo "$ROUNDS rounds × ${DURATION}s measured (+${WARM}s warm-up) per tool; 64-byte UDP frames"
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
echo "load average before: $LOAD_BEFORE (other work on the machine moves these figures)"
for t in "${!SKIP[@]}"; do echo "  skipping $t: ${SKIP[$t]}"; done

# Per tool, each round's figure appended: PPS, GBPS; CPU-seconds per Mpkt
# of tx, rx, box (TXM RXM BOXM) and per Gbit (TXG RXG BOXG); the tool's own
# CPU figures, tx and rx per Mpkt and per Gbit (SM1 SM2 SG1 SG2).
CPU_KEYS="TXM RXM BOXM TXG RXG BOXG SM1 SM2 SG1 SG2"
declare -A PPS GBPS TXM RXM BOXM TXG RXG BOXG SM1 SM2 SG1 SG2
for r in $(seq "$ROUNDS"); do
	# Even rounds run the tools in reverse: no tool always runs after the
	# same one (what ran before moves the next figure on a small machine).
	order=$TOOLS
	if ((r % 2 == 0)); then
		order=$(tr ' ' '\n' <<<"$TOOLS" | tac | tr '\n' ' ')
		echo "round $r/$ROUNDS (tools in reverse order)"
	else
		echo "round $r/$ROUNDS"
	fi
	for t in $order; do
		[[ -z ${SKIP[$t]:-} ]] || continue
		RESULT= SELF=
		if "run_$t" && [[ -n $RESULT ]]; then
			read -r pps gbps txm rxm boxm txg rxg boxg <<<"$RESULT"
			read -r sm1 sm2 sg1 sg2 <<<"${SELF:-- - - -}"
			printf '  %-18s %10s pps %8s Gb/s  CPU s/Mpkt tx %s rx %s box %s\n' "$t" "$pps" "$gbps" "$txm" "$rxm" "$boxm"
			PPS[$t]+="$pps "
			GBPS[$t]+="$gbps "
			TXM[$t]+="$txm " RXM[$t]+="$rxm " BOXM[$t]+="$boxm "
			TXG[$t]+="$txg " RXG[$t]+="$rxg " BOXG[$t]+="$boxg "
			SM1[$t]+="$sm1 " SM2[$t]+="$sm2 " SG1[$t]+="$sg1 " SG2[$t]+="$sg2 "
		else
			printf '  %-18s failed\n' "$t"
		fi
	done
done

# ---- the table -----------------------------------------------------------

median() { tr ' ' '\n' | { grep -E '^[0-9.]+$' || true; } | sort -g | awk '{ v[NR] = $1 } END {
	if (NR == 0) print ""; else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

declare -A MED_PPS MED_GBPS MED
for t in $TOOLS; do
	MED_PPS[$t]=$(median <<<"${PPS[$t]:-}")
	MED_GBPS[$t]=$(median <<<"${GBPS[$t]:-}")
	for k in $CPU_KEYS; do
		declare -n arr=$k
		v=$(median <<<"${arr[$t]:-}")
		MED[$k,$t]=${v:--}
		unset -n arr
	done
done
# cpus TOOL K1 K2 K3: the medians "a/b/c", two decimals.
cpus() {
	local t=$1 out= k v
	shift
	for k; do
		v=${MED[$k,$t]:--}
		[[ $v == - ]] || v=$(printf '%.2f' "$v")
		out+=${out:+/}$v
	done
	echo "$out"
}

# ref TOOL: the linerate row TOOL is compared with.
ref() {
	case $1 in
	linerate-tcp*) echo "$1" ;;
	*-tcp*z) local n=${1##*-tcp}; echo "linerate-tcp${n%z}" ;;
	*-tcp*) echo "linerate-tcp${1##*-tcp}copy" ;;
	linerate-default) echo linerate-default ;;
	*-xdp) best linerate-ring-xdp linerate-afxdp-xdp ;;
	*) best linerate-socket linerate-ring linerate-afxdp ;;
	esac
}

# best TOOL...: the one with the highest median pps (the first when none
# was measured).
best() {
	local b=$1 t
	for t; do
		[[ -n ${MED_PPS[$t]:-} ]] || continue
		if [[ -z ${MED_PPS[$b]:-} || $(awk -v a="${MED_PPS[$t]}" -v b="${MED_PPS[$b]}" 'BEGIN{print (a>b)}') == 1 ]]; then
			b=$t
		fi
	done
	echo "$b"
}

# bestgbps TOOL...: the one with the highest median Gb/s (the first when
# none was measured).
bestgbps() {
	local b=$1 t
	for t; do
		[[ -n ${MED_GBPS[$t]:-} ]] || continue
		if [[ -z ${MED_GBPS[$b]:-} || $(awk -v a="${MED_GBPS[$t]}" -v b="${MED_GBPS[$b]}" 'BEGIN{print (a>b)}') == 1 ]]; then
			b=$t
		fi
	done
	echo "$b"
}

# ratio A B: A/B to two decimals, or "-".
ratio() { [[ -n $1 && -n $2 ]] && awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }' || echo "-"; }

echo
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "median of $ROUNDS rounds, ${DURATION}s each; received in $NS_RX (UDP: InDatagrams; TCP, XDP: $IF_RX rx counters)"
echo "CPU: CPU-seconds per million packets and per gigabit received in the window, tx/rx/box"
echo "(tx: the sending processes, rx: the receiving ones, box: the whole machine; see the top of this script)"
printf '%-18s %-48s %10s %7s %14s %20s %20s\n' tool "what" "pps" "Gb/s" "linerate/tool" "s/Mpkt tx/rx/box" "s/Gbit tx/rx/box"
describe() {
	case $1 in
	linerate-socket) echo "bench udp $LINERATE_UDP_FLAGS -> serve" ;;
	linerate-ring) echo "bench udp --engine ring $LINERATE_UDP_FLAGS -> serve" ;;
	iperf3) echo "iperf3 -u -b 0 -l 18 -> iperf3 -s" ;;
	sockperf) echo "sockperf throughput -m 18 -> server" ;;
	trafgen) echo "trafgen -P 2, 2 ports -> recvmmsg sink" ;;
	trafgen-xdp) echo "trafgen -P 1 -> XDP drop" ;;
	linerate-ring-xdp) echo "bench udp --engine ring, 1 thread -> XDP drop" ;;
	linerate-afxdp) echo "bench udp --engine xdp $LINERATE_UDP_FLAGS -> serve" ;;
	linerate-afxdp-xdp) echo "bench udp --engine xdp, 1 thread -> XDP drop" ;;
	linerate-tcp*copy) local n=${1#linerate-tcp}; echo "bench tcp --streams ${n%copy} --copy" ;;
	linerate-tcp*) echo "bench tcp --streams ${1#linerate-tcp} (sendfile)" ;;
	iperf3-tcp*z) local n=${1#iperf3-tcp}; echo "iperf3 -P ${n%z} -Z (sendfile)" ;;
	iperf3-tcp*) echo "iperf3 -P ${1#iperf3-tcp}" ;;
	iperf2-tcp*) echo "iperf (2) -P ${1#iperf2-tcp}" ;;
	nuttcp-tcp*) echo "nuttcp -N ${1#nuttcp-tcp}" ;;
	linerate-default) echo "bench udp --to HOST (no other flag) -> serve" ;;
	esac
}
for t in $TOOLS; do
	if [[ -n ${SKIP[$t]:-} ]]; then
		printf '%-18s %-48s %10s\n' "$t" "$(describe "$t")" "skipped"
		continue
	fi
	rf=$(ref "$t")
	if [[ $t == *tcp* ]]; then
		x=$(ratio "${MED_GBPS[$rf]:-}" "${MED_GBPS[$t]:-}")
	else
		x=$(ratio "${MED_PPS[$rf]:-}" "${MED_PPS[$t]:-}")
	fi
	[[ $t == "$rf" ]] && x="(reference)"
	if [[ -z ${MED_PPS[$t]:-} ]]; then
		printf '%-18s %-48s %10s\n' "$t" "$(describe "$t")" "failed"
		continue
	fi
	printf '%-18s %-48s %10.0f %7.3f %14s %20s %20s\n' "$t" "$(describe "$t")" "${MED_PPS[$t]}" "${MED_GBPS[$t]}" "$x" \
		"$(cpus "$t" TXM RXM BOXM)" "$(cpus "$t" TXG RXG BOXG)"
done

# What linerate and iperf3 say their CPU cost was. linerate's summary is
# each end's machine CPU (here one machine: both ends and the kernel's work
# for them, so close to box above); iperf3's is its own processes' (as tx
# and rx above), over its whole run and the packets it sent.
echo
echo "CPU as the tools report it themselves (medians): client/server"
printf '%-18s %20s %20s\n' tool "s/Mpkt" "s/Gbit"
for t in $TOOLS; do
	[[ $t == linerate-* || $t == iperf3* ]] || continue
	[[ -n ${MED_PPS[$t]:-} ]] || continue
	printf '%-18s %20s %20s\n' "$t" "$(cpus "$t" SM1 SM2)" "$(cpus "$t" SG1 SG2)"
done

# The issue's targets, where both sides were measured.
echo
target() { # NAME A B MIN: A/B ≥ MIN?
	local name=$1 a=$2 b=$3 min=$4
	[[ -n $a && -n $b ]] || { echo "  $name: not measured"; return; }
	awk -v n="$name" -v a="$a" -v b="$b" -v m="$min" 'BEGIN {
		r = (b > 0) ? a / b : 0; printf "  %s: %.3fx (want >= %sx) %s\n", n, r, m, (r >= m) ? "met" : "NOT met" }'
}
best=$(ref linerate)
target "UDP 64 B: linerate vs iperf3" "${MED_PPS[$best]:-}" "${MED_PPS[iperf3]:-}" 2
target "UDP 64 B: linerate vs trafgen" "${MED_PPS[$best]:-}" "${MED_PPS[trafgen]:-}" 1
for n in 1 4 8 16; do
	copybest=$(bestgbps "iperf3-tcp$n" "iperf2-tcp$n" "nuttcp-tcp$n")
	target "TCP $n streams, both copying: linerate --copy vs the best of iperf3, iperf 2, nuttcp ($copybest)" \
		"${MED_GBPS[linerate-tcp${n}copy]:-}" "${MED_GBPS[$copybest]:-}" 1
	target "TCP $n streams, both sendfile: linerate vs iperf3 -Z" "${MED_GBPS[linerate-tcp$n]:-}" "${MED_GBPS[iperf3-tcp${n}z]:-}" 1
	target "TCP $n streams, defaults: linerate vs iperf3" "${MED_GBPS[linerate-tcp$n]:-}" "${MED_GBPS[iperf3-tcp$n]:-}" 1
done
target "UDP defaults: linerate vs iperf3" "${MED_PPS[linerate-default]:-}" "${MED_PPS[iperf3]:-}" 2
target "UDP defaults: linerate vs trafgen" "${MED_PPS[linerate-default]:-}" "${MED_PPS[trafgen]:-}" 1
# CPU per million packets, each end: iperf3's over linerate's ≥ 2 is
# linerate's at most half of iperf3's.
target "UDP defaults, sender CPU per Mpkt: iperf3 over linerate" "${MED[TXM,iperf3]:-}" "${MED[TXM,linerate-default]:-}" 2
target "UDP defaults, receiver CPU per Mpkt: iperf3 over linerate" "${MED[RXM,iperf3]:-}" "${MED[RXM,linerate-default]:-}" 2

if [[ -n $JSON ]]; then
	{
		printf '{\n  "rounds": %s, "duration_s": %s, "warm_s": %s, "cpus": %s, "kernel": "%s", "load_before": "%s", "load_after": "%s",\n  "tools": {\n' \
			"$ROUNDS" "$DURATION" "$WARM" "$(nproc)" "$(uname -r)" "$LOAD_BEFORE" "$(cut -d' ' -f1-3 /proc/loadavg)"
		first=1
		for t in $TOOLS; do
			[[ $first == 1 ]] || printf ',\n'
			first=0
			if [[ -n ${SKIP[$t]:-} ]]; then
				printf '    "%s": {"skipped": "%s"}' "$t" "${SKIP[$t]//\"/\'}"
				continue
			fi
			list() { local v; v=$(echo $1 | tr ' ' ','); echo "[$v]"; }
			num() { [[ $1 =~ ^[0-9.]+$ ]] && echo "$1" || echo null; }
			printf '    "%s": {"median_pps": %s, "median_gbps": %s, "pps": %s, "gbps": %s, "cpu_s_per_mpkt": {"tx": %s, "rx": %s, "box": %s}, "cpu_s_per_gbit": {"tx": %s, "rx": %s, "box": %s}, "self_cpu_s_per_mpkt": {"client": %s, "server": %s}, "self_cpu_s_per_gbit": {"client": %s, "server": %s}}' "$t" \
				"${MED_PPS[$t]:-null}" "${MED_GBPS[$t]:-null}" "$(list "${PPS[$t]:-}")" "$(list "${GBPS[$t]:-}")" \
				"$(num "${MED[TXM,$t]:-}")" "$(num "${MED[RXM,$t]:-}")" "$(num "${MED[BOXM,$t]:-}")" \
				"$(num "${MED[TXG,$t]:-}")" "$(num "${MED[RXG,$t]:-}")" "$(num "${MED[BOXG,$t]:-}")" \
				"$(num "${MED[SM1,$t]:-}")" "$(num "${MED[SM2,$t]:-}")" "$(num "${MED[SG1,$t]:-}")" "$(num "${MED[SG2,$t]:-}")"
		done
		printf '\n  }\n}\n'
	} >"$JSON"
	echo "wrote $JSON"
fi
