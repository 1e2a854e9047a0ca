// Package netnsread reads one live network namespace into the model of
// linerate/box: snapshots of every counter where it drops packets
// (box.Drops: rtnetlink link and qdisc statistics, softnet, snmp,
// conntrack, nftables rule counters, ethtool statistics, kfree_skb drop
// reasons) and what limits the rate through the interfaces of a test's
// path (box.PathIface: link speed, shaping qdiscs and classes).
//
// It is the part of the drop ledger's input that dials netlink and reads
// eBPF maps; box keeps the types and the arithmetic between snapshots
// (box.DropDelta), so what only models or judges drops links neither.
package netnsread

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	"linerate/box"
	"linerate/source"
	"linerate/source/ethtool"
	"linerate/source/netfilter"
	"linerate/source/netfilter/nft"
	"linerate/source/procfs"
	"linerate/source/rtnl"
	"linerate/source/rtnl/rtnetlink"
	"linerate/source/skbdrop"
)

// unavailable records in d why the source src is missing.
func unavailable(d *box.Drops, src, why string) {
	if d.Unavailable == nil {
		d.Unavailable = map[string]string{}
	}
	d.Unavailable[src] = why
}

// Options say what a Reader reads beyond the kernel's counters.
type Options struct {
	// Ifaces limits the ethtool statistics read (every interface when
	// empty).
	Ifaces []string
	// Reasons is a started drop-reason counter (one serves every namespace
	// of the machine); nil when there is none, and ReasonsUnavailable then
	// says why.
	Reasons            *skbdrop.Counter
	ReasonsUnavailable string
}

// Reader reads one live network namespace (the one its source reads):
// box.Drops snapshots, and what limits the interfaces of a test's path
// (Path). It holds an rtnetlink socket and the namespace open until Close.
type Reader struct {
	src  source.Source
	proc procfs.FS
	et   ethtool.Client
	ns   *os.File
	// dial is the namespace's descriptor for netlink sockets, 0 when it
	// is this process's own (no setns needed).
	dial    int
	rt      *rtnetlink.Conn
	netns   uint64
	machine string
	opt     Options
}

// New opens the network namespace src reads. src must be live
// (source.NewLive or NewLiveNetns); a capture gives source.ErrNotLive.
func New(src source.Source, opt Options) (*Reader, error) {
	f, inode, err := source.OpenNetns(src)
	if err != nil {
		return nil, err
	}
	// Dialing into a namespace is a setns, which takes CAP_SYS_ADMIN;
	// the namespace this process runs in needs none, so an agent without
	// that capability (linerate-serve.service) still reads its drops.
	dial := int(f.Fd())
	if source.OwnNetns(src) {
		dial = 0
	}
	rt, err := rtnetlink.Dial(dial)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", src.Name(), err)
	}
	r := &Reader{src: src, proc: src.Proc(), et: src.Ethtool(), ns: f, dial: dial, rt: rt, netns: inode, opt: opt}
	if b, err := os.ReadFile(r.proc.Path("sys", "kernel", "random", "boot_id")); err == nil {
		r.machine = strings.TrimSpace(string(b))
	}
	return r, nil
}

// Netns is the inode number of the namespace read.
func (r *Reader) Netns() uint64 { return r.netns }

// Drops takes one snapshot. Counters every kernel has (rtnetlink, snmp)
// must be readable; conntrack, nftables and drop reasons are recorded as
// unavailable, with why, when they are not.
func (r *Reader) Drops() (box.Drops, error) {
	d := box.Drops{Time: time.Now(), Netns: r.netns, Machine: r.machine}
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
		unavailable(&d, box.SourceConntrack, err.Error())
	default:
		return d, err
	}
	if rs, err := nft.ReadRuleset(r.dial); err == nil {
		d.Nftables = &rs
	} else {
		unavailable(&d, box.SourceNftables, err.Error())
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
			unavailable(&d, box.SourceReasons, err.Error())
		}
	case r.opt.ReasonsUnavailable != "":
		unavailable(&d, box.SourceReasons, r.opt.ReasonsUnavailable)
	default:
		unavailable(&d, box.SourceReasons, "not counted")
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

func (r *Reader) sysctlUint(name string) uint64 {
	s, err := source.Sysctl(r.src, name)
	if err != nil {
		return 0
	}
	v, _ := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
	return v
}

// Close releases the rtnetlink socket and the namespace.
func (r *Reader) Close() error {
	return errors.Join(r.rt.Close(), r.ns.Close())
}
