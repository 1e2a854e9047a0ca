package box

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	"linerate/source"
	"linerate/source/ethtool"
	"linerate/source/netfilter"
	"linerate/source/netfilter/nft"
	"linerate/source/procfs"
	"linerate/source/rtnl"
	"linerate/source/rtnl/rtnetlink"
	"linerate/source/skbdrop"
)

// Drops is one snapshot of every counter where a network namespace (or
// the host) counts packets it did not deliver: what the drop ledger reads.
// Two snapshots give a DropDelta, which has the same shape and holds the
// counts between them.
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

func (d *Drops) unavailable(src, why string) {
	if d.Unavailable == nil {
		d.Unavailable = map[string]string{}
	}
	d.Unavailable[src] = why
}

// DropOptions say what a NetnsReader reads beyond the kernel's counters.
type DropOptions struct {
	// Ifaces limits the ethtool statistics read (every interface when
	// empty).
	Ifaces []string
	// Reasons is a started drop-reason counter (one serves every namespace
	// of the machine); nil when there is none, and ReasonsUnavailable then
	// says why.
	Reasons            *skbdrop.Counter
	ReasonsUnavailable string
}

// NetnsReader reads one live network namespace (the one its source
// reads): Drops snapshots, and what limits the interfaces of a test's path
// (Path). It holds an rtnetlink socket and the namespace open until Close.
type NetnsReader struct {
	src     source.Source
	proc    procfs.FS
	et      ethtool.Client
	ns      *os.File
	rt      *rtnetlink.Conn
	netns   uint64
	machine string
	opt     DropOptions
}

// NewNetnsReader opens the network namespace src reads. src must be live
// (source.NewLive or NewLiveNetns); a capture gives source.ErrNotLive.
func NewNetnsReader(src source.Source, opt DropOptions) (*NetnsReader, error) {
	f, inode, err := source.OpenNetns(src)
	if err != nil {
		return nil, err
	}
	rt, err := rtnetlink.Dial(int(f.Fd()))
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", src.Name(), err)
	}
	r := &NetnsReader{src: src, proc: src.Proc(), et: src.Ethtool(), ns: f, rt: rt, netns: inode, opt: opt}
	if b, err := os.ReadFile(r.proc.Path("sys", "kernel", "random", "boot_id")); err == nil {
		r.machine = strings.TrimSpace(string(b))
	}
	return r, nil
}

// Netns is the inode number of the namespace read.
func (r *NetnsReader) Netns() uint64 { return r.netns }

// Drops takes one snapshot. Counters every kernel has (rtnetlink, snmp)
// must be readable; conntrack, nftables and drop reasons are recorded as
// unavailable, with why, when they are not.
func (r *NetnsReader) Drops() (Drops, error) {
	d := Drops{Time: time.Now(), Netns: r.netns, Machine: r.machine}
	links, err := r.rt.Links()
	if err != nil {
		return d, fmt.Errorf("%s: %w", r.src.Name(), err)
	}
	d.Links = make(map[string]rtnl.Link, len(links))
	for _, l := range links {
		d.Links[l.Name] = l
	}
	if d.Qdiscs, err = r.rt.Qdiscs(); err != nil {
		return d, fmt.Errorf("%s: %w", r.src.Name(), err)
	}
	if d.Softnet, err = r.proc.Softnet(); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return d, err
	}
	if d.SNMP, err = r.proc.SNMP(); err != nil {
		return d, err
	}
	if ext, err := procfsNetstat(r.proc); err == nil {
		for k, v := range ext {
			d.SNMP[k] = v
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return d, err
	}
	switch ct, err := netfilter.ReadConntrackStat(r.proc); {
	case err == nil:
		ct.Max = r.sysctlUint("net.netfilter.nf_conntrack_max")
		ct.Buckets = r.sysctlUint("net.netfilter.nf_conntrack_buckets")
		d.Conntrack = &ct
	case errors.Is(err, netfilter.ErrNoConntrack):
		d.unavailable(SourceConntrack, err.Error())
	default:
		return d, err
	}
	if rs, err := nft.ReadRuleset(int(r.ns.Fd())); err == nil {
		d.Nftables = &rs
	} else {
		d.unavailable(SourceNftables, err.Error())
	}
	if r.et != nil {
		names := r.opt.Ifaces
		if len(names) == 0 {
			for n := range d.Links {
				names = append(names, n)
			}
		}
		for _, n := range names {
			st, err := r.et.Stats(n)
			if err != nil || len(st) == 0 {
				continue // no driver statistics (loopback) or gone: nothing to add
			}
			if d.Ethtool == nil {
				d.Ethtool = map[string]map[string]uint64{}
			}
			d.Ethtool[n] = st.Map()
		}
	}
	switch {
	case r.opt.Reasons != nil:
		if d.Reasons, err = r.opt.Reasons.Read(r.netns); err != nil {
			d.unavailable(SourceReasons, err.Error())
		}
	case r.opt.ReasonsUnavailable != "":
		d.unavailable(SourceReasons, r.opt.ReasonsUnavailable)
	default:
		d.unavailable(SourceReasons, "not counted")
	}
	return d, nil
}

func procfsNetstat(proc procfs.FS) (map[string]map[string]uint64, error) {
	f, err := os.Open(proc.NetPath("netstat"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m, err := procfs.ParseSNMP(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", proc.NetPath("netstat"), err)
	}
	return m, nil
}

func (r *NetnsReader) sysctlUint(name string) uint64 {
	s, err := source.Sysctl(r.src, name)
	if err != nil {
		return 0
	}
	v, _ := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
	return v
}

// Close releases the rtnetlink socket and the namespace.
func (r *NetnsReader) Close() error {
	return errors.Join(r.rt.Close(), r.ns.Close())
}

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
