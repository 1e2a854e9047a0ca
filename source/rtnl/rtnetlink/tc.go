package rtnetlink

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"linerate/source/rtnl"
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

	sizeofRatespec = 12
)

// Qdiscs dumps every qdisc of every interface, with interface names.
func (c *Conn) Qdiscs() ([]rtnl.Qdisc, error) {
	names, err := c.names()
	if err != nil {
		return nil, err
	}
	msgs, err := c.dump(unix.RTM_GETQDISC, unix.RTM_NEWQDISC, make([]byte, sizeofTcmsg))
	if err != nil {
		return nil, fmt.Errorf("rtnetlink qdisc dump: %w", err)
	}
	out := make([]rtnl.Qdisc, 0, len(msgs))
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
func (c *Conn) Classes(ifindex int) ([]rtnl.Class, error) {
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
	out := make([]rtnl.Class, 0, len(msgs))
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

func (h tcHeader) node(kind string) rtnl.Node {
	return rtnl.Node{Ifindex: h.ifindex, Kind: kind, Handle: h.handle, Parent: h.parent}
}

// tcMessage splits a traffic-control message into its header, its kind,
// its raw options and its statistics.
func tcMessage(b []byte) (h tcHeader, kind string, opts []byte, st rtnl.QdiscStats, err error) {
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
		return h, kind, opts, st, fmt.Errorf("interface %d handle %s: %w", h.ifindex, rtnl.Handle(h.handle), err)
	}
	return h, kind, opts, st, nil
}

// decodeStats reads the TCA_STATS_* attributes of TCA_STATS2.
func decodeStats(ad *netlink.AttributeDecoder) rtnl.QdiscStats {
	var st rtnl.QdiscStats
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

func decodeQdisc(b []byte) (rtnl.Qdisc, error) {
	h, kind, opts, st, err := tcMessage(b)
	q := rtnl.Qdisc{Node: h.node(kind), Stats: st}
	if err != nil {
		return q, err
	}
	if err := qdiscOptions(&q, opts); err != nil {
		return q, fmt.Errorf("%s qdisc %s of interface %d: %w", kind, rtnl.Handle(h.handle), h.ifindex, err)
	}
	return q, nil
}

// qdiscOptions reads the kind-specific TCA_OPTIONS that say how fast the
// qdisc q lets packets out or how much it holds.
func qdiscOptions(q *rtnl.Qdisc, b []byte) error {
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
			var r rtnl.Rate
			var have bool
			var ticks uint32
			for ad.Next() {
				switch ad.Type() {
				case tcaTbfParms:
					// struct tc_tbf_qopt { rate, peakrate tc_ratespec; limit, buffer, mtu }
					p := ad.Bytes()
					if len(p) >= 2*sizeofRatespec+4 {
						r, have = ratespec(p[:sizeofRatespec], r.BytesPerSecond), true
						q.Limit, q.LimitUnit = binary.NativeEndian.Uint32(p[2*sizeofRatespec:]), "bytes"
					}
					if len(p) >= 2*sizeofRatespec+8 {
						ticks = binary.NativeEndian.Uint32(p[2*sizeofRatespec+4:])
					}
				case tcaTbfRate64:
					r.BytesPerSecond = ad.Uint64()
				}
			}
			if have {
				q.Rate = &r
				q.Burst = tbfBurst(ticks, r.BytesPerSecond)
			}
		})
	case "cake":
		return decodeNested(b, func(ad *netlink.AttributeDecoder) {
			var r rtnl.Rate
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
						r.Linklayer = rtnl.LinklayerATM
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

// pschedTickNs is the length of a packet-scheduler tick: the kernel
// dumps tbf's bucket as the time it takes to fill, in ticks of
// PSCHED_TICKS2NS(1) = 1 << PSCHED_SHIFT nanoseconds (include/net/pkt_sched.h).
const pschedTickNs = 1 << 6

// tbfBurst is the bytes a tbf's bucket holds: its fill time (ticks) at
// its rate (bytes per second), capped at what a u32 holds.
func tbfBurst(ticks uint32, rate uint64) uint32 {
	b := float64(ticks) * pschedTickNs * float64(rate) / 1e9
	return uint32(min(math.Round(b), math.MaxUint32))
}

func decodeClass(b []byte) (rtnl.Class, error) {
	h, kind, opts, st, err := tcMessage(b)
	c := rtnl.Class{Node: h.node(kind), Stats: st}
	if err != nil || kind != "htb" {
		return c, err
	}
	err = decodeNested(opts, func(ad *netlink.AttributeDecoder) {
		var rate, ceil rtnl.Rate
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
		return c, fmt.Errorf("htb class %s of interface %d: %w", rtnl.Handle(h.handle), h.ifindex, err)
	}
	return c, nil
}

// ratespec reads struct tc_ratespec { __u8 cell_log; __u8 linklayer;
// __u16 overhead; __s16 cell_align; __u16 mpu; __u32 rate; }. rate64 is a
// 64-bit rate attribute already read (rates of 2^32 bytes/s and more do not
// fit the struct); it wins over the struct's field when set.
func ratespec(b []byte, rate64 uint64) rtnl.Rate {
	r := rtnl.Rate{
		Linklayer: rtnl.Linklayer(b[1] & 0x0f), // TC_LINKLAYER_MASK
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
