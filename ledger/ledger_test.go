package ledger

import (
	"slices"
	"strings"
	"testing"

	"linerate/box"
	"linerate/source/netfilter"
	"linerate/source/rtnl"
)

// The deltas below have the shape of what box.DropDelta gave in this
// package's privileged tests (a client — router — server of namespaces on
// one machine) and, for the physical NIC, of an igb port dropping at its
// ring (rx_missed_errors from the MPC register).

const machine = "c617ebeb-93a6-4bbf-9c82-de7d398d7156"

func veth(name string, s rtnl.LinkStats) rtnl.Link {
	return rtnl.Link{Name: name, Kind: "veth", Stats: s}
}

func snmp(sec string, kv ...any) map[string]map[string]uint64 {
	m := map[string]uint64{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = uint64(kv[i+1].(int))
	}
	return map[string]map[string]uint64{sec: m}
}

func entries(l Ledger) map[string]uint64 {
	m := map[string]uint64{}
	for _, e := range l.Entries {
		m[e.Host+"/"+string(e.Place)] += e.Packets
	}
	return m
}

func TestBuild(t *testing.T) {
	rootTbf := func(iface string, drops uint64) rtnl.Qdisc {
		return rtnl.Qdisc{Node: rtnl.Node{Iface: iface, Kind: "tbf", Handle: 0x10000, Parent: 0xFFFFFFFF},
			Limit: 6000, LimitUnit: "bytes", Stats: rtnl.QdiscStats{Drops: drops, Overlimits: drops + 300}}
	}
	for _, c := range []struct {
		name   string
		test   Test
		hosts  []Host
		want   map[string]uint64
		excess uint64
		note   string
		// evidence is a line some entry's evidence must hold.
		evidence string
	}{{
		name: "veth backlog seen three times, placed once",
		test: Test{Sent: 100000, Received: 99500},
		hosts: []Host{
			{Name: "client", Side: Sender, Ifaces: []string{"c0"}, Delta: box.Drops{Machine: machine,
				Links:   map[string]rtnl.Link{"c0": veth("c0", rtnl.LinkStats{TxPackets: 99500, TxDropped: 500})},
				Softnet: []box.Softnet{{CPU: 0, Dropped: 500}, {CPU: 1}}, SNMP: snmp("Udp", "OutDatagrams", 100000)}},
			{Name: "server", Side: Receiver, Ifaces: []string{"s0"}, Delta: box.Drops{Machine: machine,
				Links:   map[string]rtnl.Link{"s0": veth("s0", rtnl.LinkStats{RxPackets: 99500, RxDropped: 500})},
				Softnet: []box.Softnet{{CPU: 0, Dropped: 500}, {CPU: 1}}, SNMP: snmp("Udp", "InDatagrams", 99500)}},
		},
		want: map[string]uint64{"server/backlog": 500},
	}, {
		// traffic's TestUDPCountsMatchRxCounter under load: the veth
		// returned NET_XMIT_DROP, which udp_send_skb counted as
		// SndbufErrors on the client.
		name: "a veth peer's backlog drop is also the sender's SndbufErrors",
		test: Test{Sent: 79292, Received: 79228},
		hosts: []Host{
			{Name: "client", Side: Sender, Ifaces: []string{"lra"}, Delta: box.Drops{Machine: machine,
				Links:   map[string]rtnl.Link{"lra": veth("lra", rtnl.LinkStats{TxPackets: 79228, TxDropped: 64})},
				Softnet: []box.Softnet{{CPU: 1, Dropped: 64}}, SNMP: map[string]map[string]uint64{"Udp": {"SndbufErrors": 64}, "Ip": {"OutDiscards": 64}}}},
			{Name: "server", Side: Receiver, Ifaces: []string{"lrb"}, Delta: box.Drops{Machine: machine,
				Links:   map[string]rtnl.Link{"lrb": veth("lrb", rtnl.LinkStats{RxPackets: 79228, RxDropped: 64})},
				Softnet: []box.Softnet{{CPU: 1, Dropped: 64}}, Reasons: map[string]uint64{"CPU_BACKLOG": 64}}},
		},
		want: map[string]uint64{"server/backlog": 64},
	}, {
		name: "backlog of a machine of its own",
		test: Test{Sent: 50000, Received: 49000},
		hosts: []Host{{Name: "server", Side: Receiver, Delta: box.Drops{Machine: "other-boot-id",
			Links:   map[string]rtnl.Link{"eth0": {Name: "eth0"}},
			Softnet: []box.Softnet{{CPU: 0, Dropped: 600}, {CPU: 3, Dropped: 400}}}}},
		want: map[string]uint64{"server/backlog": 1000},
	}, {
		// A bench from a lab namespace into a guest while other labs on
		// the same machine dropped at their backlogs: the machine's
		// softnet_stat counted them, the client's path (a tap) nothing.
		name: "the machine's backlog drops off this host's path",
		test: Test{Sent: 200000, Received: 28098},
		hosts: []Host{{Name: "client", Side: Sender, Ifaces: []string{"b"}, Delta: box.Drops{Machine: machine,
			Links:   map[string]rtnl.Link{"b": {Name: "b", Kind: "tun", Stats: rtnl.LinkStats{TxPackets: 29474, TxDropped: 172332}}},
			Softnet: []box.Softnet{{CPU: 1, Dropped: 57865}},
			Reasons: map[string]uint64{"FULL_RING": 172332}}}},
		want:   map[string]uint64{"client/nic-rx-ring": 172332},
		excess: 430,
		note:   "none on its path",
	}, {
		name: "igb ring and socket buffer",
		test: Test{Sent: 1488095, Received: 1487695},
		hosts: []Host{{Name: "apu", Side: Receiver, Ifaces: []string{"enp1s0"}, Delta: box.Drops{
			Links: map[string]rtnl.Link{
				"enp1s0": {Name: "enp1s0", Stats: rtnl.LinkStats{RxMissedErrors: 300}},
				"enp2s0": {Name: "enp2s0", Stats: rtnl.LinkStats{RxMissedErrors: 9999}}, // not on the path
			},
			Ethtool: map[string]map[string]uint64{"enp1s0": {"rx_no_buffer_count": 1200, "rx_missed_errors": 300}},
			SNMP:    snmp("Udp", "RcvbufErrors", 100, "InErrors", 100)}}},
		want: map[string]uint64{"apu/nic-rx-ring": 300, "apu/socket-buffer": 100},
	}, {
		name: "a sender's qdisc drop is also SndbufErrors and OutDiscards",
		test: Test{Sent: 2000, Received: 189},
		hosts: []Host{{Name: "client", Side: Sender, Ifaces: []string{"c0"}, Delta: box.Drops{
			Links:   map[string]rtnl.Link{"c0": veth("c0", rtnl.LinkStats{})},
			Qdiscs:  []rtnl.Qdisc{rootTbf("c0", 1812)},
			SNMP:    map[string]map[string]uint64{"Udp": {"SndbufErrors": 1812}, "Ip": {"OutDiscards": 1812}},
			Reasons: map[string]uint64{"QDISC_DROP": 1812}}}},
		want:   map[string]uint64{"client/sender-qdisc": 1812},
		excess: 1,
	}, {
		name: "conntrack drops are netfilter verdicts too",
		test: Test{Sent: 10000, Received: 9750},
		hosts: []Host{{Name: "router", Side: Path, Delta: box.Drops{
			Conntrack: &netfilter.ConntrackStat{Entries: 65536, Max: 65536, Counters: map[string]uint64{"drop": 140, "insert_failed": 10, "early_drop": 3000}},
			Nftables: &netfilter.Ruleset{Rules: []netfilter.RuleCounter{
				{Family: "inet", Table: "fw", Chain: "forward", Handle: 7, Verdict: netfilter.VerdictDrop, Packets: 100, Exact: true},
				{Family: "inet", Table: "fw", Chain: "forward", Handle: 8, Verdict: netfilter.VerdictAccept, Packets: 9750, Exact: true},
			}},
			Reasons: map[string]uint64{"NETFILTER_DROP": 250}}}},
		want: map[string]uint64{"router/conntrack": 150, "router/netfilter": 100},
	}, {
		name: "a policy drop only the drop reasons see",
		test: Test{Sent: 3000, Received: 2700},
		hosts: []Host{{Name: "server", Side: Receiver, Delta: box.Drops{
			Nftables: &netfilter.Ruleset{DropPolicies: []string{"inet filter input"}},
			Reasons:  map[string]uint64{"NETFILTER_DROP": 300, "TCP_OLD_DATA": 12, "TCP_OFO_DROP": 3}}}},
		want: map[string]uint64{"server/netfilter": 300},
	}, {
		name:  "nothing counted: all unaccounted",
		test:  Test{Sent: 1000, Received: 0},
		hosts: []Host{{Name: "server", Side: Receiver, Delta: box.Drops{SNMP: snmp("Udp")}}},
		want:  map[string]uint64{"/unaccounted": 1000},
		note:  "drop reasons unavailable",
	}, {
		name: "other never takes more than what is left",
		test: Test{Sent: 1000, Received: 940},
		hosts: []Host{{Name: "client", Side: Sender, Delta: box.Drops{
			SNMP:    snmp("Udp", "NoPorts", 10),
			Reasons: map[string]uint64{"NEIGH_QUEUEFULL": 50, "IPV6DISABLED": 3, "NO_SOCKET": 10}}}},
		want: map[string]uint64{"client/no-socket": 10, "client/other": 50},
	}, {
		name: "refused sends are not losses",
		test: Test{Sent: 1800, Received: 1750, Refused: 230},
		hosts: []Host{{Name: "client", Side: Sender, Delta: box.Drops{
			SNMP: snmp("Udp", "SndbufErrors", 30),
			Nftables: &netfilter.Ruleset{Rules: []netfilter.RuleCounter{
				{Family: "inet", Table: "t", Chain: "output", Handle: 2, Verdict: netfilter.VerdictDrop, Packets: 250, Exact: true}}},
		}}},
		want: map[string]uint64{"client/netfilter": 50},
	}, {
		name: "a physical sender's tx drops; veth's are its peer's",
		test: Test{Sent: 5000, Received: 4900},
		hosts: []Host{{Name: "pi", Side: Sender, Delta: box.Drops{Links: map[string]rtnl.Link{
			"eth0":  {Name: "eth0", Stats: rtnl.LinkStats{TxDropped: 60, TxErrors: 40, TxFifoErrors: 40}},
			"veth1": veth("veth1", rtnl.LinkStats{TxDropped: 70}),
		}}}},
		want: map[string]uint64{"pi/nic-tx": 100},
	}, {
		name: "xdp drops on veth",
		test: Test{Sent: 800, Received: 0},
		hosts: []Host{{Name: "server", Side: Receiver, Ifaces: []string{"s0"}, Delta: box.Drops{
			Links:   map[string]rtnl.Link{"s0": veth("s0", rtnl.LinkStats{RxDropped: 800})},
			Ethtool: map[string]map[string]uint64{"s0": {"rx_queue_0_xdp_drops": 800, "rx_queue_0_xdp_packets": 800}},
			Reasons: map[string]uint64{}}}},
		want: map[string]uint64{"server/xdp": 800},
	}, {
		// A bench from a namespace into a QEMU guest behind a tap (lab up
		// --vm): the guest's virtio ring was full, QEMU stopped reading,
		// and tun_net_xmit dropped at the tap with FULL_RING. One drop,
		// seen by the tap's tx_dropped and the reason.
		name: "a tap's reader had no room",
		test: Test{Sent: 3365261, Received: 121547},
		hosts: []Host{
			{Name: "client", Side: Sender, Ifaces: []string{"b"}, Delta: box.Drops{
				Links:   map[string]rtnl.Link{"b": {Name: "b", Kind: "tun", Stats: rtnl.LinkStats{TxPackets: 138356, TxDropped: 3230276}}},
				Reasons: map[string]uint64{"FULL_RING": 3230276}}},
			{Name: "server", Side: Receiver, Ifaces: []string{"a"}, Delta: box.Drops{
				Links:   map[string]rtnl.Link{"a": {Name: "a", Stats: rtnl.LinkStats{RxPackets: 136051}}},
				SNMP:    snmp("Udp", "RcvbufErrors", 14354),
				Reasons: map[string]uint64{"SOCKET_RCVBUFF": 14354}}},
		},
		want: map[string]uint64{"client/nic-rx-ring": 3230276, "server/socket-buffer": 14354},
		// The tap's counter covers the drops window, a little wider than
		// the measured one.
		excess: 916,
	}, {
		// igb counts a queue's ring overflows per queue and in
		// rx_fifo_errors: placed once, the queue named.
		name: "a ring's drops by queue",
		test: Test{Sent: 10000, Received: 9500},
		hosts: []Host{{Name: "server", Side: Receiver, Delta: box.Drops{
			Links:   map[string]rtnl.Link{"eth1": {Name: "eth1", Stats: rtnl.LinkStats{RxFifoErrors: 500}}},
			Ethtool: map[string]map[string]uint64{"eth1": {"rx_queue_0_drops": 0, "rx_queue_1_drops": 500, "rx_queue_1_packets": 9500}}}}},
		want:     map[string]uint64{"server/nic-rx-ring": 500},
		evidence: "eth1: the driver's per-queue drops: queue 1 500",
	}, {
		// virtio_net's per-queue drops are its own (receive errors and
		// XDP drops): the XDP ones are placed at xdp, the rest as other.
		name: "a driver's own drops by queue",
		test: Test{Sent: 1000, Received: 970},
		hosts: []Host{{Name: "server", Side: Receiver, Delta: box.Drops{
			Links:   map[string]rtnl.Link{"a": {Name: "a", Stats: rtnl.LinkStats{RxDropped: 30}}},
			Ethtool: map[string]map[string]uint64{"a": {"rx_queue_2_drops": 30, "rx_queue_2_xdp_drops": 10}}}}},
		want:     map[string]uint64{"server/xdp": 10, "server/other": 20},
		evidence: "a: the driver's per-queue drops: queue 2 30 (less the 10 XDP drops among them)",
	}, {
		name:   "counters see more than the test lost",
		test:   Test{Sent: 1000, Received: 900},
		hosts:  []Host{{Name: "server", Side: Receiver, Delta: box.Drops{SNMP: snmp("Udp", "NoPorts", 400)}}},
		want:   map[string]uint64{"server/no-socket": 400},
		excess: 300,
		note:   "more drops than the test lost",
	}} {
		t.Run(c.name, func(t *testing.T) {
			l := Build(c.test, c.hosts)
			got := entries(l)
			for k, v := range c.want {
				if got[k] != v {
					t.Errorf("%s = %d, want %d", k, got[k], v)
				}
			}
			for k, v := range got {
				if _, ok := c.want[k]; !ok {
					t.Errorf("unexpected %s = %d", k, v)
				}
			}
			if l.Excess != c.excess {
				t.Errorf("excess %d, want %d", l.Excess, c.excess)
			}
			if l.Placed()+l.Unaccounted() != l.Lost+l.Excess {
				t.Errorf("placed %d + unaccounted %d != lost %d + excess %d", l.Placed(), l.Unaccounted(), l.Lost, l.Excess)
			}
			if c.note != "" && !strings.Contains(strings.Join(l.Notes, "\n"), c.note) {
				t.Errorf("notes %q lack %q", l.Notes, c.note)
			}
			var all []string
			for _, e := range l.Entries {
				if len(e.Evidence) == 0 {
					t.Errorf("%s/%s has no evidence", e.Host, e.Place)
				}
				all = append(all, e.Evidence...)
			}
			if c.evidence != "" && !slices.Contains(all, c.evidence) {
				t.Errorf("evidence %q lacks %q", all, c.evidence)
			}
		})
	}
}

func TestPlacesOrderAndNames(t *testing.T) {
	seen := map[Place]bool{}
	for _, p := range Places {
		if seen[p] || p == "" || strings.ToLower(string(p)) != string(p) {
			t.Errorf("place %q", p)
		}
		seen[p] = true
	}
	for r, p := range reasonPlaces {
		if !seen[p] {
			t.Errorf("reason %s maps to unknown place %q", r, p)
		}
	}
}

// TestLinkDown: what was sent while a link was down is placed at
// link-down, up to the loss, and the counters that saw the same drops (a
// NIC without carrier drops at transmit) give up what would be counted
// twice.
func TestLinkDown(t *testing.T) {
	client := Host{Name: "client", Side: Sender, Ifaces: []string{"eth0"}, Delta: box.Drops{Machine: machine,
		Links: map[string]rtnl.Link{"eth0": {Name: "eth0", Kind: "", Stats: rtnl.LinkStats{TxPackets: 100000, TxDropped: 60000, TxCarrierErrors: 60000}}}}}
	for _, c := range []struct {
		name     string
		test     Test
		want     map[string]uint64
		overlaps int // notes of drops moved to link-down
	}{
		{"the cut's loss, seen at transmit", Test{Sent: 160000, Received: 100000, LinkDown: 60000},
			map[string]uint64{"/link-down": 60000}, 1},
		{"more sent while down than lost", Test{Sent: 160000, Received: 100000, LinkDown: 75000},
			map[string]uint64{"/link-down": 60000}, 1},
		{"part of the loss outside the cut", Test{Sent: 170000, Received: 100000, LinkDown: 50000},
			map[string]uint64{"/link-down": 50000, "client/nic-tx": 20000}, 1},
		{"the cut's loss, no counter saw it", Test{Sent: 160000, Received: 100000, LinkDown: 60000},
			nil, 0},
		{"no event", Test{Sent: 160000, Received: 100000},
			map[string]uint64{"client/nic-tx": 60000}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			hosts := []Host{client}
			if c.want == nil {
				hosts, c.want = nil, map[string]uint64{"/link-down": 60000}
			}
			l := Build(c.test, hosts)
			got := entries(l)
			for k, v := range c.want {
				if got[k] != v {
					t.Errorf("%s: %d, want %d (entries %v)", k, got[k], v, got)
				}
			}
			if len(got) != len(c.want) {
				t.Errorf("entries %v, want %v", got, c.want)
			}
			if l.Excess != 0 || !l.Balanced() {
				t.Errorf("excess %d", l.Excess)
			}
			if c.test.LinkDown > 0 && l.Entries[0].Place != LinkDown {
				t.Errorf("first entry %+v, want link-down first", l.Entries[0])
			}
			n := 0
			for _, e := range l.Entries {
				for _, ev := range e.Evidence {
					if strings.Contains(ev, "fell while the link was down") {
						n++
					}
				}
			}
			if n != c.overlaps && c.test.LinkDown > 0 {
				t.Errorf("%d notes of drops moved to link-down, want %d: %+v", n, c.overlaps, l.Entries)
			}
		})
	}
}
