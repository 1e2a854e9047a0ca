# bench/netns.sh — sourced by compare.sh, rate.sh and soak.sh: the veth
# pair between two network namespaces each script measures across.

# netns_pair NS_A NS_B IF_A IF_B ADDR_A ADDR_B [TX_QUEUES]: makes both
# namespaces (loopback up) and a veth pair IF_A (in NS_A, ADDR_A/24) —
# IF_B (in NS_B, ADDR_B/24), both up. With TX_QUEUES, IF_A uses that many
# TX queues (ethtool -L; AF_XDP binds one socket per queue); when ethtool
# refuses, a line on stderr says what will fail.
netns_pair() {
	local a=$1 b=$2 ifa=$3 ifb=$4 ipa=$5 ipb=$6 txq=${7:-}
	ip netns add "$a"
	ip netns add "$b"
	ip -n "$a" link set lo up
	ip -n "$b" link set lo up
	ip -n "$a" link add name "$ifa" type veth peer name "$ifb" netns "$b"
	ip -n "$a" addr add "$ipa/24" dev "$ifa"
	ip -n "$b" addr add "$ipb/24" dev "$ifb"
	ip -n "$a" link set "$ifa" up
	if [[ -n $txq ]]; then
		ip netns exec "$a" ethtool -L "$ifa" tx "$txq" >/dev/null 2>&1 ||
			echo "$(basename "$0"): ethtool -L $ifa tx $txq failed: AF_XDP runs with $txq ports will fail" >&2
	fi
	ip -n "$b" link set "$ifb" up
}
