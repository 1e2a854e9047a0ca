package rtnl

import (
	"encoding/binary"
	"fmt"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// Message layouts of traffic control, from include/uapi/linux/rtnetlink.h
// (struct tcmsg, TCA_*), gen_stats.h (TCA_STATS_*, struct gnet_stats_basic
// and gnet_stats_queue) and pkt_sched.h (TC_H_*, struct tc_ratespec, the
// tbf, htb, fifo and cake options). golang.org/x/sys/unix lacks most of
// them.
const (
	sizeofTcmsg = 20

	tcaKind    = 1
	tcaOptions = 2
	tcaStats2  = 7

	tcaStatsBasic = 1
	tcaStatsQueue = 3
	tcaStatsPkt64 = 8

	tcaTbfParms  = 1
	tcaTbfRate64 = 4

	tcaHtbParms  = 1
	tcaHtbRate64 = 6
	tcaHtbCeil64 = 7

	tcaCakeBaseRate64 = 2
	tcaCakeATM        = 4
	tcaCakeOverhead   = 6
	tcaCakeMPU        = 14

	// TC_H_ROOT and TC_H_INGRESS (clsact uses the same parent).
	handleRoot    = 0xFFFFFFFF
	handleIngress = 0xFFFFFFF1

	sizeofRatespec = 12
)

// Linklayer is tc_ratespec's link layer: how a shaper sizes a packet.
type Linklayer uint8

// TC_LINKLAYER_* of pkt_sched.h.
const (
	LinklayerUnaware  Linklayer = 0
	LinklayerEthernet Linklayer = 1
	// LinklayerATM rounds every packet up to whole 53-byte cells of 48
	// bytes of payload.
	LinklayerATM Linklayer = 2
)

// Rate is the rate of a shaper and how it counts a packet's size: the
// packet as the kernel holds it (the Ethernet header and what follows it,
// no FCS, preamble or gap), plus Overhead, at least MPU, in ATM cells when
// Linklayer says so.
type Rate struct {
	BytesPerSecond uint64    `json:"bytes_per_second"`
	Overhead       int       `json:"overhead,omitempty"`
	MPU            int       `json:"mpu,omitempty"`
	Linklayer      Linklayer `json:"linklayer,omitempty"`
}

// BitsPerSecond is the rate in bits per second.
func (r Rate) BitsPerSecond() float64 { return float64(r.BytesPerSecond) * 8 }

// QdiscStats are the counters of a qdisc or class (TCA_STATS2).
type QdiscStats struct {
	Bytes   uint64 `json:"bytes"`
	Packets uint64 `json:"packets"`
	Drops   uint64 `json:"drops"`
	// Overlimits counts the times the qdisc held a packet back because it
	// was over its rate (a shaper throttling), not drops.
	Overlimits uint64 `json:"overlimits"`
	Requeues   uint64 `json:"requeues"`
	// Backlog (bytes) and Qlen (packets) are what is queued now: gauges.
	Backlog uint64 `json:"backlog"`
	Qlen    uint64 `json:"qlen"`
}

// Sub returns the counters of s − a (backlog and qlen stay s's); a counter
// that went backwards gives 0. The 32-bit drops, overlimits and requeues
// are taken modulo 2^32 so that a wrap between a and s still subtracts.
func (s QdiscStats) Sub(a QdiscStats) QdiscStats {
	d := QdiscStats{Backlog: s.Backlog, Qlen: s.Qlen}
	if s.Bytes > a.Bytes {
		d.Bytes = s.Bytes - a.Bytes
	}
	if s.Packets > a.Packets {
		d.Packets = s.Packets - a.Packets
	}
	d.Drops = uint64(uint32(s.Drops) - uint32(a.Drops))
	d.Overlimits = uint64(uint32(s.Overlimits) - uint32(a.Overlimits))
	d.Requeues = uint64(uint32(s.Requeues) - uint32(a.Requeues))
	return d
}

// Node is what qdiscs and classes share: where they sit.
type Node struct {
	Ifindex int    `json:"ifindex"`
	Iface   string `json:"iface"`
	Kind    string `json:"kind"`
	Handle  uint32 `json:"handle"`
	Parent  uint32 `json:"parent"`
}

// Qdisc is one queueing discipline of an interface.
type Qdisc struct {
	Node
	// Rate is set for a qdisc that shapes on its own (tbf, cake with a
	// bandwidth); htb's rates are its classes'.
	Rate *Rate `json:"rate,omitempty"`
	// Limit is the queue's length limit, in LimitUnit ("packets" or
	// "bytes"); 0 when the qdisc kind's options are not read here.
	Limit     uint32     `json:"limit,omitempty"`
	LimitUnit string     `json:"limit_unit,omitempty"`
	Stats     QdiscStats `json:"stats"`
}

// Root reports whether the qdisc is an interface's egress root: its
// counters include every qdisc and class below it.
func (q Qdisc) Root() bool { return q.Parent == handleRoot }

// Ingress reports whether the qdisc is an ingress or clsact qdisc.
func (q Qdisc) Ingress() bool { return q.Parent == handleIngress }

// Class is one traffic class of a classful qdisc.
type Class struct {
	Node
	// Rate is the guaranteed rate and Ceil the most the class may borrow
	// up to (htb); nil when the class kind has none.
	Rate  *Rate      `json:"rate,omitempty"`
	Ceil  *Rate      `json:"ceil,omitempty"`
	Stats QdiscStats `json:"stats"`
}

// Handle formats a tc handle as tc prints it: "1:", "1:10", "root",
// "ingress".
func Handle(h uint32) string {
	switch h {
	case handleRoot:
		return "root"
	case handleIngress:
		return "ingress"
	}
	major, minor := h>>16, h&0xffff
	if minor == 0 {
		return fmt.Sprintf("%x:", major)
	}
	return fmt.Sprintf("%x:%x", major, minor)
}

// Qdiscs dumps every qdisc of every interface, with interface names.
func (c *Conn) Qdiscs() ([]Qdisc, error) {
	names, err := c.names()
	if err != nil {
		return nil, err
	}
	msgs, err := c.dump(unix.RTM_GETQDISC, unix.RTM_NEWQDISC, make([]byte, sizeofTcmsg))
	if err != nil {
		return nil, fmt.Errorf("rtnetlink qdisc dump: %w", err)
	}
	out := make([]Qdisc, 0, len(msgs))
	for _, m := range msgs {
		q, err := decodeQdisc(m)
		if err != nil {
			return nil, fmt.Errorf("rtnetlink qdisc dump: %w", err)
		}
		q.Iface = names[q.Ifindex]
		out = append(out, q)
	}
	return out, nil
}

// Classes dumps the traffic classes of the interface ifindex.
func (c *Conn) Classes(ifindex int) ([]Class, error) {
	names, err := c.names()
	if err != nil {
		return nil, err
	}
	req := make([]byte, sizeofTcmsg)
	binary.NativeEndian.PutUint32(req[4:8], uint32(int32(ifindex)))
	msgs, err := c.dump(unix.RTM_GETTCLASS, unix.RTM_NEWTCLASS, req)
	if err != nil {
		return nil, fmt.Errorf("rtnetlink class dump of interface %d: %w", ifindex, err)
	}
	out := make([]Class, 0, len(msgs))
	for _, m := range msgs {
		cl, err := decodeClass(m)
		if err != nil {
			return nil, fmt.Errorf("rtnetlink class dump of interface %d: %w", ifindex, err)
		}
		cl.Iface = names[cl.Ifindex]
		out = append(out, cl)
	}
	return out, nil
}

func (c *Conn) names() (map[int]string, error) {
	links, err := c.Links()
	if err != nil {
		return nil, err
	}
	m := make(map[int]string, len(links))
	for _, l := range links {
		m[l.Index] = l.Name
	}
	return m, nil
}

// tcHeader is struct tcmsg.
type tcHeader struct {
	ifindex        int
	handle, parent uint32
}

func (h tcHeader) node(kind string) Node {
	return Node{Ifindex: h.ifindex, Kind: kind, Handle: h.handle, Parent: h.parent}
}

// tcMessage splits a traffic-control message into its header, its kind,
// its raw options and its statistics.
func tcMessage(b []byte) (h tcHeader, kind string, opts []byte, st QdiscStats, err error) {
	if len(b) < sizeofTcmsg {
		return h, "", nil, st, fmt.Errorf("tc message of %d bytes, shorter than struct tcmsg", len(b))
	}
	h = tcHeader{
		ifindex: int(int32(binary.NativeEndian.Uint32(b[4:8]))),
		handle:  binary.NativeEndian.Uint32(b[8:12]),
		parent:  binary.NativeEndian.Uint32(b[12:16]),
	}
	ad, err := netlink.NewAttributeDecoder(b[sizeofTcmsg:])
	if err != nil {
		return h, "", nil, st, err
	}
	for ad.Next() {
		switch ad.Type() {
		case tcaKind:
			kind = ad.String()
		case tcaOptions:
			opts = ad.Bytes()
		case tcaStats2:
			ad.Nested(func(nad *netlink.AttributeDecoder) error {
				st = decodeStats(nad)
				return nil
			})
		}
	}
	if err := ad.Err(); err != nil {
		return h, kind, opts, st, fmt.Errorf("interface %d handle %s: %w", h.ifindex, Handle(h.handle), err)
	}
	return h, kind, opts, st, nil
}

// decodeStats reads the TCA_STATS_* attributes of TCA_STATS2.
func decodeStats(ad *netlink.AttributeDecoder) QdiscStats {
	var st QdiscStats
	var pkt64 bool
	for ad.Next() {
		b := ad.Bytes()
		switch ad.Type() {
		case tcaStatsBasic:
			// struct gnet_stats_basic { __u64 bytes; __u32 packets; }
			if len(b) >= 12 {
				st.Bytes = binary.NativeEndian.Uint64(b[0:8])
				if !pkt64 {
					st.Packets = uint64(binary.NativeEndian.Uint32(b[8:12]))
				}
			}
		case tcaStatsPkt64:
			if len(b) >= 8 {
				st.Packets, pkt64 = binary.NativeEndian.Uint64(b), true
			}
		case tcaStatsQueue:
			// struct gnet_stats_queue { qlen, backlog, drops, requeues, overlimits }
			if len(b) >= 20 {
				st.Qlen = uint64(binary.NativeEndian.Uint32(b[0:4]))
				st.Backlog = uint64(binary.NativeEndian.Uint32(b[4:8]))
				st.Drops = uint64(binary.NativeEndian.Uint32(b[8:12]))
				st.Requeues = uint64(binary.NativeEndian.Uint32(b[12:16]))
				st.Overlimits = uint64(binary.NativeEndian.Uint32(b[16:20]))
			}
		}
	}
	return st
}

func decodeQdisc(b []byte) (Qdisc, error) {
	h, kind, opts, st, err := tcMessage(b)
	q := Qdisc{Node: h.node(kind), Stats: st}
	if err != nil {
		return q, err
	}
	if err := q.options(opts); err != nil {
		return q, fmt.Errorf("%s qdisc %s of interface %d: %w", kind, Handle(h.handle), h.ifindex, err)
	}
	return q, nil
}

// options reads the kind-specific TCA_OPTIONS that say how fast the qdisc
// lets packets out or how much it holds.
func (q *Qdisc) options(b []byte) error {
	switch q.Kind {
	case "pfifo", "bfifo":
		// struct tc_fifo_qopt { __u32 limit; }, not nested.
		if len(b) >= 4 {
			q.Limit = binary.NativeEndian.Uint32(b)
			q.LimitUnit = "packets"
			if q.Kind == "bfifo" {
				q.LimitUnit = "bytes"
			}
		}
		return nil
	case "tbf":
		return decodeNested(b, func(ad *netlink.AttributeDecoder) {
			var r Rate
			var have bool
			for ad.Next() {
				switch ad.Type() {
				case tcaTbfParms:
					// struct tc_tbf_qopt { rate, peakrate tc_ratespec; limit, buffer, mtu }
					p := ad.Bytes()
					if len(p) >= 2*sizeofRatespec+4 {
						r, have = ratespec(p[:sizeofRatespec], r.BytesPerSecond), true
						q.Limit, q.LimitUnit = binary.NativeEndian.Uint32(p[2*sizeofRatespec:]), "bytes"
					}
				case tcaTbfRate64:
					r.BytesPerSecond = ad.Uint64()
				}
			}
			if have {
				q.Rate = &r
			}
		})
	case "cake":
		return decodeNested(b, func(ad *netlink.AttributeDecoder) {
			var r Rate
			for ad.Next() {
				switch ad.Type() {
				case tcaCakeBaseRate64:
					r.BytesPerSecond = ad.Uint64()
				case tcaCakeOverhead:
					r.Overhead = int(ad.Int32())
				case tcaCakeMPU:
					r.MPU = int(ad.Uint32())
				case tcaCakeATM:
					// CAKE_ATM_NONE 0, CAKE_ATM_ATM 1, CAKE_ATM_PTM 2.
					if ad.Uint32() == 1 {
						r.Linklayer = LinklayerATM
					}
				}
			}
			if r.BytesPerSecond > 0 { // 0 is cake's "unlimited"
				q.Rate = &r
			}
		})
	}
	return nil
}

func decodeClass(b []byte) (Class, error) {
	h, kind, opts, st, err := tcMessage(b)
	c := Class{Node: h.node(kind), Stats: st}
	if err != nil || kind != "htb" {
		return c, err
	}
	err = decodeNested(opts, func(ad *netlink.AttributeDecoder) {
		var rate, ceil Rate
		var have bool
		for ad.Next() {
			switch ad.Type() {
			case tcaHtbParms:
				// struct tc_htb_opt { rate, ceil tc_ratespec; buffer, cbuffer, quantum, level, prio }
				p := ad.Bytes()
				if len(p) >= 2*sizeofRatespec {
					rate = ratespec(p[:sizeofRatespec], rate.BytesPerSecond)
					ceil = ratespec(p[sizeofRatespec:2*sizeofRatespec], ceil.BytesPerSecond)
					have = true
				}
			case tcaHtbRate64:
				rate.BytesPerSecond = ad.Uint64()
			case tcaHtbCeil64:
				ceil.BytesPerSecond = ad.Uint64()
			}
		}
		if have {
			c.Rate, c.Ceil = &rate, &ceil
		}
	})
	if err != nil {
		return c, fmt.Errorf("htb class %s of interface %d: %w", Handle(h.handle), h.ifindex, err)
	}
	return c, nil
}

// ratespec reads struct tc_ratespec { __u8 cell_log; __u8 linklayer;
// __u16 overhead; __s16 cell_align; __u16 mpu; __u32 rate; }. rate64 is a
// 64-bit rate attribute already read (rates of 2^32 bytes/s and more do not
// fit the struct); it wins over the struct's field when set.
func ratespec(b []byte, rate64 uint64) Rate {
	r := Rate{
		Linklayer: Linklayer(b[1] & 0x0f), // TC_LINKLAYER_MASK
		Overhead:  int(binary.NativeEndian.Uint16(b[2:4])),
		MPU:       int(binary.NativeEndian.Uint16(b[6:8])),
	}
	r.BytesPerSecond = uint64(binary.NativeEndian.Uint32(b[8:12]))
	if rate64 > r.BytesPerSecond {
		r.BytesPerSecond = rate64
	}
	return r
}

func decodeNested(b []byte, fn func(*netlink.AttributeDecoder)) error {
	if len(b) == 0 {
		return nil
	}
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return err
	}
	fn(ad)
	return ad.Err()
}
