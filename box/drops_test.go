package box

import (
	"testing"

	"linerate/source/netfilter"
	"linerate/source/rtnl"
)

func TestDropDelta(t *testing.T) {
	q := func(drops, qlen uint64) rtnl.Qdisc {
		return rtnl.Qdisc{Node: rtnl.Node{Iface: "eth0", Kind: "tbf", Handle: 0x10000, Parent: 0xFFFFFFFF}, Stats: rtnl.QdiscStats{Drops: drops, Qlen: qlen}}
	}
	a := Drops{
		Links:     map[string]rtnl.Link{"eth0": {Name: "eth0", Index: 2, Stats: rtnl.LinkStats{RxPackets: 100, RxMissedErrors: 5}}, "old": {Name: "old", Index: 9}},
		Qdiscs:    []rtnl.Qdisc{q(10, 3)},
		Softnet:   []Softnet{{CPU: 0, Dropped: 7, Processed: 100}, {CPU: 1, Dropped: 1}},
		SNMP:      map[string]map[string]uint64{"Udp": {"NoPorts": 4, "RcvbufErrors": 9}},
		Conntrack: &netfilter.ConntrackStat{Entries: 10, Counters: map[string]uint64{"drop": 2}},
		Nftables:  &netfilter.Ruleset{Rules: []netfilter.RuleCounter{{Family: "inet", Table: "t", Chain: "c", Handle: 1, Packets: 5}}},
		Ethtool:   map[string]map[string]uint64{"eth0": {"rx_missed_errors": 5}},
		Reasons:   map[string]uint64{"NO_SOCKET": 4},
	}
	b := Drops{
		Machine: "m",
		Links: map[string]rtnl.Link{
			"eth0": {Name: "eth0", Index: 2, Stats: rtnl.LinkStats{RxPackets: 150, RxMissedErrors: 8}},
			"new":  {Name: "new", Index: 10, Stats: rtnl.LinkStats{RxPackets: 3}},
		},
		Qdiscs:    []rtnl.Qdisc{q(25, 1)},
		Softnet:   []Softnet{{CPU: 0, Dropped: 9, Processed: 160}, {CPU: 1, Dropped: 1}},
		SNMP:      map[string]map[string]uint64{"Udp": {"NoPorts": 10, "RcvbufErrors": 9, "MemErrors": 2}},
		Conntrack: &netfilter.ConntrackStat{Entries: 12, Counters: map[string]uint64{"drop": 5}},
		Nftables:  &netfilter.Ruleset{Rules: []netfilter.RuleCounter{{Family: "inet", Table: "t", Chain: "c", Handle: 1, Packets: 8}}},
		Ethtool:   map[string]map[string]uint64{"eth0": {"rx_missed_errors": 8}},
		Reasons:   map[string]uint64{"NO_SOCKET": 10, "CPU_BACKLOG": 2},
	}
	d := DropDelta(a, b)
	if d.Machine != "m" || len(d.Links) != 2 || d.Links["eth0"].Stats.RxPackets != 50 || d.Links["eth0"].Stats.RxMissedErrors != 3 || d.Links["new"].Stats.RxPackets != 3 {
		t.Errorf("links = %+v", d.Links)
	}
	if len(d.Qdiscs) != 1 || d.Qdiscs[0].Stats.Drops != 15 || d.Qdiscs[0].Stats.Qlen != 1 {
		t.Errorf("qdiscs = %+v", d.Qdiscs)
	}
	if d.Softnet[0].Dropped != 2 || d.Softnet[0].Processed != 60 || d.Softnet[1].Dropped != 0 {
		t.Errorf("softnet = %+v", d.Softnet)
	}
	if u := d.SNMP["Udp"]; u["NoPorts"] != 6 || u["RcvbufErrors"] != 0 || u["MemErrors"] != 2 {
		t.Errorf("snmp = %+v", d.SNMP)
	}
	if d.Conntrack.Counters["drop"] != 3 || d.Conntrack.Entries != 12 || d.Nftables.Rules[0].Packets != 3 {
		t.Errorf("netfilter = %+v %+v", d.Conntrack, d.Nftables)
	}
	if d.Ethtool["eth0"]["rx_missed_errors"] != 3 || d.Reasons["NO_SOCKET"] != 6 || d.Reasons["CPU_BACKLOG"] != 2 {
		t.Errorf("ethtool %v reasons %v", d.Ethtool, d.Reasons)
	}
	// An interface recreated under the same name counts from zero.
	b.Links["eth0"] = rtnl.Link{Name: "eth0", Index: 11, Stats: rtnl.LinkStats{RxPackets: 4}}
	if d := DropDelta(a, b); d.Links["eth0"].Stats.RxPackets != 4 {
		t.Errorf("recreated link: %+v", d.Links["eth0"])
	}
}
