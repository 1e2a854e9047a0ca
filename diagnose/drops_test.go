package diagnose

import (
	"strings"
	"testing"

	"linerate/box"
	"linerate/results"
	"linerate/source/netfilter"
	"linerate/source/rtnl"
)

// The deltas have the shape box.DropDelta gave in the ledger package's
// privileged tests (router namespace of client — router — server), over a
// window of 2 s.

func finding(t *testing.T, ev *Evidence, rule string) *Finding {
	t.Helper()
	fs, err := Run(ev, rule)
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) == 0 {
		return nil
	}
	return &fs[0]
}

func has(list []string, frag string) bool {
	for _, s := range list {
		if strings.Contains(s, frag) {
			return true
		}
	}
	return false
}

func fixOf(f *Finding, kind FixKind, target string) *Fix {
	for i := range f.Fixes {
		if f.Fixes[i].Kind == kind && strings.Contains(f.Fixes[i].Target, target) {
			return &f.Fixes[i]
		}
	}
	return nil
}

func routerLinks() map[string]rtnl.Link {
	return map[string]rtnl.Link{
		"r0": {Name: "r0", Kind: "veth", TxQueueLen: 1000, Stats: rtnl.LinkStats{RxPackets: 2000, TxPackets: 3}},
		"r1": {Name: "r1", Kind: "veth", TxQueueLen: 1000, Stats: rtnl.LinkStats{RxPackets: 2, TxPackets: 1800}},
		"lo": {Name: "lo", Loopback: true},
	}
}

func TestNetfilterDrop(t *testing.T) {
	d := &box.Drops{Seconds: 2, Links: routerLinks(),
		Nftables: &netfilter.Ruleset{Rules: []netfilter.RuleCounter{
			{Family: "inet", Table: "lrt", Chain: "forward", Hook: "forward", Handle: 2, Verdict: netfilter.VerdictDrop, Packets: 200, Exact: true},
			{Family: "inet", Table: "lrt", Chain: "forward", Hook: "forward", Handle: 3, Verdict: netfilter.VerdictAccept, Packets: 1800, Exact: true},
		}, DropPolicies: []string{"inet lrt input"}},
		Reasons: map[string]uint64{"NETFILTER_DROP": 260}}
	f := finding(t, &Evidence{Drops: d}, "netfilter-drop")
	if f == nil {
		t.Fatal("did not fire")
	}
	if !strings.Contains(f.Summary, "130/s") || !has(f.Evidence, "inet lrt forward #2") || !has(f.Evidence, "policy drop") {
		t.Errorf("finding = %+v", f)
	}
	if fx := fixOf(f, "boot", "firewall"); fx == nil || !strings.Contains(fx.Value, "inet lrt forward #2") {
		t.Errorf("fixes = %+v", f.Fixes)
	}
	if len(f.Fixes) != 2 {
		t.Errorf("60 drops outside any counter should add a policy fix: %+v", f.Fixes)
	}
	// Accept rules and conntrack's own drops are not the firewall's.
	d.Nftables.Rules = d.Nftables.Rules[1:]
	d.Reasons = map[string]uint64{"NETFILTER_DROP": 40}
	d.Conntrack = &netfilter.ConntrackStat{Counters: map[string]uint64{"drop": 40}}
	if f := finding(t, &Evidence{Drops: d}, "netfilter-drop"); f != nil {
		t.Errorf("fired on conntrack's drops: %+v", f)
	}
	if f := finding(t, &Evidence{}, "netfilter-drop"); f != nil {
		t.Error("fired without drop counters")
	}
}

func TestConntrackDrop(t *testing.T) {
	full := &box.Drops{Seconds: 2, Links: routerLinks(), Conntrack: &netfilter.ConntrackStat{
		Entries: 65500, Max: 65536, Buckets: 65536,
		Counters: map[string]uint64{"drop": 300, "insert_failed": 0, "early_drop": 4000}}}
	f := finding(t, &Evidence{Drops: full}, "conntrack-drop")
	if f == nil || f.Severity != Critical || !strings.Contains(f.Summary, "full") || !has(f.Evidence, "nf_conntrack_max 65536") {
		t.Fatalf("full table: %+v", f)
	}
	if fx := fixOf(f, "sysctl", "nf_conntrack_max"); fx == nil || fx.Value != "262144" {
		t.Errorf("fixes = %+v", f.Fixes)
	}
	if fx := fixOf(f, "sysctl", "nf_conntrack_buckets"); fx == nil || fx.Value != "262144" {
		t.Errorf("fixes = %+v", f.Fixes)
	}
	race := &box.Drops{Seconds: 2, Conntrack: &netfilter.ConntrackStat{Entries: 120, Max: 262144,
		Counters: map[string]uint64{"drop": 0, "insert_failed": 14}}}
	f = finding(t, &Evidence{Drops: race}, "conntrack-drop")
	if f == nil || f.Severity != Warning || !strings.Contains(f.Summary, "inserts") || fixOf(f, "sysctl", "") != nil {
		t.Errorf("insert races: %+v", f)
	}
	quiet := &box.Drops{Conntrack: &netfilter.ConntrackStat{Entries: 3, Max: 262144, Counters: map[string]uint64{"new": 3}}}
	if f := finding(t, &Evidence{Drops: quiet}, "conntrack-drop"); f != nil {
		t.Errorf("fired on a quiet tracker: %+v", f)
	}
}

func TestQdiscDrop(t *testing.T) {
	shaper := rtnl.Qdisc{Node: rtnl.Node{Iface: "r1", Kind: "tbf", Handle: 0x10000, Parent: 0xFFFFFFFF},
		Rate: &rtnl.Rate{BytesPerSecond: 1250000}, Limit: 6000, LimitUnit: "bytes",
		Stats: rtnl.QdiscStats{Drops: 1768, Overlimits: 2169}}
	fifo := rtnl.Qdisc{Node: rtnl.Node{Iface: "r0", Kind: "pfifo_fast", Parent: 0xFFFFFFFF}, Stats: rtnl.QdiscStats{Drops: 50}}
	child := rtnl.Qdisc{Node: rtnl.Node{Iface: "r1", Kind: "bfifo", Handle: 0x20000, Parent: 0x10001}, Stats: rtnl.QdiscStats{Drops: 1768}}
	d := &box.Drops{Seconds: 2, Links: routerLinks(), Qdiscs: []rtnl.Qdisc{shaper, child, fifo}}
	fs, err := Run(&Evidence{Drops: d}, "qdisc-drop")
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 2 {
		t.Fatalf("%d findings, want the shaper and the fifo (not the shaper's child): %+v", len(fs), fs)
	}
	var sh, ff *Finding
	for i := range fs {
		if fs[i].Subject == "r1" {
			sh = &fs[i]
		} else {
			ff = &fs[i]
		}
	}
	if sh == nil || !strings.Contains(sh.Summary, "shaper") || !strings.Contains(sh.Summary, "10 Mb/s") || !strings.Contains(sh.Fixes[0].Value, "is the limit") {
		t.Errorf("shaper: %+v", sh)
	}
	if ff == nil || ff.Fixes[0].Kind != FixTxQueueLen || ff.Fixes[0].Target != "r0" || ff.Fixes[0].Value != "2000" {
		t.Errorf("fifo: %+v", ff)
	}
	bf := rtnl.Qdisc{Node: rtnl.Node{Iface: "r0", Kind: "bfifo", Parent: 0xFFFFFFFF}, Limit: 30000, LimitUnit: "bytes", Stats: rtnl.QdiscStats{Drops: 5}}
	d.Qdiscs = []rtnl.Qdisc{bf}
	if f := finding(t, &Evidence{Drops: d}, "qdisc-drop"); f == nil || f.Fixes[0].Value != "tc qdisc change dev r0 root bfifo limit 60000" {
		t.Errorf("bfifo: %+v", f)
	}
}

func TestUDPClosedPort(t *testing.T) {
	d := &box.Drops{Seconds: 2, Links: routerLinks(),
		SNMP: map[string]map[string]uint64{"Udp": {"NoPorts": 2000, "InDatagrams": 1}}}
	f := finding(t, &Evidence{Drops: d}, "udp-closed-port")
	if f == nil || !strings.Contains(f.Summary, "nothing listens") || f.Fixes[0].Kind != "bench" {
		t.Fatalf("no NAT: %+v", f)
	}
	d.Nftables = &netfilter.Ruleset{NATChains: []string{"ip nat postrouting"}}
	d.Conntrack = &netfilter.ConntrackStat{Entries: 40, Max: 262144, Counters: map[string]uint64{}}
	f = finding(t, &Evidence{Drops: d}, "udp-closed-port")
	if f == nil || !strings.Contains(f.Summary, "NAT") || !has(f.Evidence, "ip nat postrouting") {
		t.Fatalf("NAT: %+v", f)
	}
	if fx := fixOf(f, "sysctl", "nf_conntrack_udp_timeout"); fx == nil || fx.Value != "60" {
		t.Errorf("fixes = %+v", f.Fixes)
	}
	d.SNMP["Udp"]["NoPorts"] = 0
	if f := finding(t, &Evidence{Drops: d}, "udp-closed-port"); f != nil {
		t.Errorf("fired without NoPorts: %+v", f)
	}
}

// TestDropsFromBenchResult: a saved bench result's drop counters of the
// chosen end feed the drop rules.
func TestDropsFromBenchResult(t *testing.T) {
	srv := &box.Drops{Seconds: 2, Links: routerLinks(),
		Nftables: &netfilter.Ruleset{Rules: []netfilter.RuleCounter{
			{Family: "inet", Table: "lrt", Chain: "input", Hook: "input", Handle: 2, Verdict: netfilter.VerdictDrop, Packets: 500, Exact: true},
		}},
		Reasons: map[string]uint64{"NETFILTER_DROP": 500}}
	r := &results.Result{Drops: []results.EndDrops{
		{Side: "client", Target: -1, Delta: &box.Drops{Seconds: 2, Links: routerLinks()}},
		{Side: "server", Target: 0, Ifaces: []string{"r0"}, Delta: srv},
	}}
	f := finding(t, FromResult(r, "server", nil), "netfilter-drop")
	if f == nil || !has(f.Evidence, "inet lrt input #2") || len(f.Fixes) == 0 {
		t.Errorf("server's drops: finding %+v", f)
	}
	if f := finding(t, FromResult(r, "client", nil), "netfilter-drop"); f != nil {
		t.Errorf("fired on the client, whose firewall dropped nothing: %+v", f)
	}
}
