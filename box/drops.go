package box

import (
	"time"

	"linerate/source/netfilter"
	"linerate/source/rtnl"
)

// Drops is one snapshot of every counter where a network namespace (or
// the host) counts packets it did not deliver: what the drop ledger reads.
// Two snapshots give a DropDelta, which has the same shape and holds the
// counts between them. The live reader of a namespace's Drops is
// linerate/box/netnsread.
type Drops struct {
	Time time.Time `json:"time"`
	// Seconds is the time a DropDelta covers; 0 in a snapshot.
	Seconds float64 `json:"seconds,omitempty"`
	// Netns is the namespace's inode number (ns.inum), the key of drop
	// reasons; 0 when unknown.
	Netns uint64 `json:"netns,omitempty"`
	// Machine is the kernel's boot id: namespaces of one machine share the
	// per-CPU softnet counters, which are not per namespace.
	Machine string `json:"machine,omitempty"`
	// Links are the interfaces' rtnetlink statistics, by name.
	Links map[string]rtnl.Link `json:"links"`
	// Qdiscs are every qdisc of every interface, with their statistics.
	Qdiscs []rtnl.Qdisc `json:"qdiscs,omitempty"`
	// Softnet is net/softnet_stat, one entry per CPU (the machine's, not
	// the namespace's).
	Softnet []Softnet `json:"softnet,omitempty"`
	// SNMP holds the sections of net/snmp and net/netstat: "Ip", "Udp",
	// "Tcp", "Icmp", "IpExt", "TcpExt", ...
	SNMP map[string]map[string]uint64 `json:"snmp"`
	// Conntrack is nil when nf_conntrack is not loaded.
	Conntrack *netfilter.ConntrackStat `json:"conntrack,omitempty"`
	// Nftables is nil when the rules could not be read (see Unavailable).
	Nftables *netfilter.Ruleset `json:"nftables,omitempty"`
	// Ethtool holds `ethtool -S` counters of the interfaces that have them.
	Ethtool map[string]map[string]uint64 `json:"ethtool,omitempty"`
	// Reasons counts the namespace's dropped packets by kfree_skb drop
	// reason ("NETFILTER_DROP", "NO_SOCKET", ...); nil when not counted.
	Reasons map[string]uint64 `json:"reasons,omitempty"`
	// Unavailable says why a source is missing: "reasons", "conntrack",
	// "nftables" → the reason.
	Unavailable map[string]string `json:"unavailable,omitempty"`
}

// The keys of Drops.Unavailable.
const (
	SourceReasons   = "reasons"
	SourceConntrack = "conntrack"
	SourceNftables  = "nftables"
)

// DropDelta returns what b counted since a, in the shape of a snapshot:
// counters are differences (a counter that went backwards gives 0),
// gauges (qdisc backlog and qlen, conntrack entries, max and buckets) are
// b's. Links, qdiscs, rules and counters that a lacks are taken whole, as
// counted from zero; those b lacks are left out.
func DropDelta(a, b Drops) Drops {
	d := Drops{Time: b.Time, Netns: b.Netns, Machine: b.Machine, Unavailable: b.Unavailable}
	if !a.Time.IsZero() && b.Time.After(a.Time) {
		d.Seconds = b.Time.Sub(a.Time).Seconds()
	}
	d.Links = make(map[string]rtnl.Link, len(b.Links))
	for name, l := range b.Links {
		if p, ok := a.Links[name]; ok && p.Index == l.Index {
			l.Stats = l.Stats.Sub(p.Stats)
		}
		d.Links[name] = l
	}
	type qkey struct {
		iface, kind    string
		handle, parent uint32
	}
	prevQ := make(map[qkey]rtnl.Qdisc, len(a.Qdiscs))
	for _, q := range a.Qdiscs {
		prevQ[qkey{q.Iface, q.Kind, q.Handle, q.Parent}] = q
	}
	for _, q := range b.Qdiscs {
		if p, ok := prevQ[qkey{q.Iface, q.Kind, q.Handle, q.Parent}]; ok {
			q.Stats = q.Stats.Sub(p.Stats)
		}
		d.Qdiscs = append(d.Qdiscs, q)
	}
	prevSN := make(map[int]Softnet, len(a.Softnet))
	for _, s := range a.Softnet {
		prevSN[s.CPU] = s
	}
	for _, s := range b.Softnet {
		p := prevSN[s.CPU]
		d.Softnet = append(d.Softnet, Softnet{
			CPU: s.CPU, Processed: diff(p.Processed, s.Processed), Dropped: diff(p.Dropped, s.Dropped),
			TimeSqueeze: diff(p.TimeSqueeze, s.TimeSqueeze), ReceivedRPS: diff(p.ReceivedRPS, s.ReceivedRPS),
			FlowLimit: diff(p.FlowLimit, s.FlowLimit), BacklogLen: s.BacklogLen,
		})
	}
	d.SNMP = make(map[string]map[string]uint64, len(b.SNMP))
	for sec, m := range b.SNMP {
		d.SNMP[sec] = countDiffs(a.SNMP[sec], m)
	}
	if b.Conntrack != nil {
		ct := *b.Conntrack
		if a.Conntrack != nil {
			ct = b.Conntrack.Sub(*a.Conntrack)
		}
		d.Conntrack = &ct
	}
	if b.Nftables != nil {
		rs := *b.Nftables
		if a.Nftables != nil {
			rs = b.Nftables.Sub(*a.Nftables)
		}
		d.Nftables = &rs
	}
	for iface, m := range b.Ethtool {
		if d.Ethtool == nil {
			d.Ethtool = map[string]map[string]uint64{}
		}
		d.Ethtool[iface] = countDiffs(a.Ethtool[iface], m)
	}
	if b.Reasons != nil {
		d.Reasons = countDiffs(a.Reasons, b.Reasons)
	}
	return d
}

// countDiffs is b − a by name; a name a lacks counts from zero.
func countDiffs(a, b map[string]uint64) map[string]uint64 {
	out := make(map[string]uint64, len(b))
	for k, v := range b {
		out[k] = diff(a[k], v)
	}
	return out
}
