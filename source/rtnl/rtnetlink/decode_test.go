package rtnetlink

import (
	"encoding/binary"
	"testing"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"linerate/source/rtnl"
)

func attrs(t *testing.T, as ...netlink.Attribute) []byte {
	t.Helper()
	b, err := netlink.MarshalAttributes(as)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func u32(v uint32) []byte { return binary.NativeEndian.AppendUint32(nil, v) }
func u64(v uint64) []byte { return binary.NativeEndian.AppendUint64(nil, v) }

func TestDecodeLink(t *testing.T) {
	hdr := make([]byte, unix.SizeofIfInfomsg)
	binary.NativeEndian.PutUint32(hdr[4:8], 7)
	// 25 counters: rx_packets=1, tx_packets=2, ... rx_otherhost_dropped=25.
	var stats []byte
	for i := range 25 {
		stats = append(stats, u64(uint64(i+1))...)
	}
	info := attrs(t, netlink.Attribute{Type: unix.IFLA_INFO_KIND, Data: []byte("veth\x00")})
	msg := append(hdr, attrs(t,
		netlink.Attribute{Type: unix.IFLA_IFNAME, Data: []byte("veth0\x00")},
		netlink.Attribute{Type: unix.IFLA_MTU, Data: u32(1500)},
		netlink.Attribute{Type: unix.IFLA_MAX_MTU, Data: u32(65535)},
		netlink.Attribute{Type: unix.IFLA_TXQLEN, Data: u32(1000)},
		netlink.Attribute{Type: unix.IFLA_QDISC, Data: []byte("noqueue\x00")},
		netlink.Attribute{Type: unix.IFLA_LINK, Data: u32(9)},
		netlink.Attribute{Type: unix.IFLA_STATS64, Data: stats},
		netlink.Attribute{Type: unix.IFLA_LINKINFO | unix.NLA_F_NESTED, Data: info},
	)...)
	l, err := decodeLink(msg)
	if err != nil {
		t.Fatal(err)
	}
	if l.Index != 7 || l.Name != "veth0" || l.Kind != "veth" || l.MTU != 1500 || l.MaxMTU != 65535 || l.TxQueueLen != 1000 || l.Qdisc != "noqueue" || l.Peer != 9 {
		t.Errorf("link = %+v", l)
	}
	s := l.Stats
	if s.RxPackets != 1 || s.TxDropped != 8 || s.RxFifoErrors != 15 || s.RxMissedErrors != 16 || s.RxNohandler != 24 || s.RxOtherhostDropped != 25 {
		t.Errorf("stats = %+v", s)
	}
	// A 4.x kernel sends 23 counters: the rest read 0.
	old := decodeLinkStats(stats[:23*8])
	if old.TxCompressed != 23 || old.RxNohandler != 0 {
		t.Errorf("23-counter stats = %+v", old)
	}
	if _, err := decodeLink(hdr[:8]); err == nil {
		t.Error("short message: no error")
	}
	d := s.Sub(rtnl.LinkStats{RxPackets: 5, TxPackets: 1})
	if d.RxPackets != 0 || d.TxPackets != 1 || d.RxNohandler != 24 {
		t.Errorf("Sub = %+v", d)
	}
}

func tcmsg(ifindex int, handle, parent uint32) []byte {
	b := make([]byte, sizeofTcmsg)
	binary.NativeEndian.PutUint32(b[4:8], uint32(ifindex))
	binary.NativeEndian.PutUint32(b[8:12], handle)
	binary.NativeEndian.PutUint32(b[12:16], parent)
	return b
}

func ratespecBytes(rate uint32, overhead uint16, linklayer uint8) []byte {
	b := make([]byte, sizeofRatespec)
	b[1] = linklayer
	binary.NativeEndian.PutUint16(b[2:4], overhead)
	binary.NativeEndian.PutUint32(b[8:12], rate)
	return b
}

func stats2(t *testing.T, bytes uint64, pkts uint32, pkt64 uint64, q [5]uint32) []byte {
	basic := append(u64(bytes), u32(pkts)...)
	basic = append(basic, 0, 0, 0, 0)
	var queue []byte
	for _, v := range q {
		queue = append(queue, u32(v)...)
	}
	as := []netlink.Attribute{{Type: tcaStatsBasic, Data: basic}, {Type: tcaStatsQueue, Data: queue}}
	if pkt64 > 0 {
		as = append(as, netlink.Attribute{Type: tcaStatsPkt64, Data: u64(pkt64)})
	}
	return attrs(t, as...)
}

func TestDecodeTbf(t *testing.T) {
	// tc qdisc add dev veth0 root tbf rate 100mbit burst 32kb limit 15000
	parms := append(ratespecBytes(12500000, 0, uint8(rtnl.LinklayerEthernet)), ratespecBytes(0, 0, 0)...)
	parms = append(parms, u32(15000)...)
	// 32 KiB at 12.5 MB/s fill in 2.62 ms: 40960 ticks of 64 ns.
	parms = append(parms, u32(40960)...)
	parms = append(parms, u32(0)...)
	msg := append(tcmsg(3, 0x80010000, rtnl.HandleRoot), attrs(t,
		netlink.Attribute{Type: tcaKind, Data: []byte("tbf\x00")},
		netlink.Attribute{Type: tcaOptions | unix.NLA_F_NESTED, Data: attrs(t, netlink.Attribute{Type: tcaTbfParms, Data: parms})},
		netlink.Attribute{Type: tcaStats2 | unix.NLA_F_NESTED, Data: stats2(t, 1e9, 5, 1<<33, [5]uint32{2, 3000, 17, 1, 400})},
	)...)
	q, err := decodeQdisc(msg)
	if err != nil {
		t.Fatal(err)
	}
	if !q.Root() || q.Kind != "tbf" || rtnl.Handle(q.Handle) != "8001:" || q.Limit != 15000 || q.LimitUnit != "bytes" || q.Burst != 32768 {
		t.Errorf("qdisc = %+v", q)
	}
	if q.Rate == nil || q.Rate.BytesPerSecond != 12500000 || q.Rate.BitsPerSecond() != 100e6 || q.Rate.Linklayer != rtnl.LinklayerEthernet {
		t.Errorf("rate = %+v", q.Rate)
	}
	st := q.Stats
	if st.Bytes != 1e9 || st.Packets != 1<<33 || st.Qlen != 2 || st.Backlog != 3000 || st.Drops != 17 || st.Requeues != 1 || st.Overlimits != 400 {
		t.Errorf("stats = %+v (the 64-bit packet count wins over the 32-bit one)", st)
	}
}

func TestDecodeRate64AndCake(t *testing.T) {
	// A tbf of 40 Gbit/s: 5e9 bytes/s does not fit tc_ratespec's u32.
	parms := append(ratespecBytes(0xffffffff, 0, 1), ratespecBytes(0, 0, 0)...)
	parms = append(parms, make([]byte, 12)...)
	q, err := decodeQdisc(append(tcmsg(3, 0x10000, rtnl.HandleRoot), attrs(t,
		netlink.Attribute{Type: tcaKind, Data: []byte("tbf\x00")},
		netlink.Attribute{Type: tcaOptions | unix.NLA_F_NESTED, Data: attrs(t,
			netlink.Attribute{Type: tcaTbfParms, Data: parms},
			netlink.Attribute{Type: tcaTbfRate64, Data: u64(5e9)})},
	)...))
	if err != nil || q.Rate == nil || q.Rate.BytesPerSecond != 5e9 {
		t.Fatalf("tbf rate64: %+v, %v", q.Rate, err)
	}
	// cake bandwidth 20mbit overhead 18 mpu 64 atm.
	c, err := decodeQdisc(append(tcmsg(3, 0x10000, rtnl.HandleRoot), attrs(t,
		netlink.Attribute{Type: tcaKind, Data: []byte("cake\x00")},
		netlink.Attribute{Type: tcaOptions | unix.NLA_F_NESTED, Data: attrs(t,
			netlink.Attribute{Type: tcaCakeBaseRate64, Data: u64(2500000)},
			netlink.Attribute{Type: tcaCakeOverhead, Data: u32(18)},
			netlink.Attribute{Type: tcaCakeMPU, Data: u32(64)},
			netlink.Attribute{Type: tcaCakeATM, Data: u32(1)})},
	)...))
	if err != nil || c.Rate == nil || *c.Rate != (rtnl.Rate{BytesPerSecond: 2500000, Overhead: 18, MPU: 64, Linklayer: rtnl.LinklayerATM}) {
		t.Fatalf("cake: %+v, %v", c.Rate, err)
	}
	// Unlimited cake has no rate.
	u, _ := decodeQdisc(append(tcmsg(3, 0x10000, rtnl.HandleRoot), attrs(t,
		netlink.Attribute{Type: tcaKind, Data: []byte("cake\x00")},
		netlink.Attribute{Type: tcaOptions | unix.NLA_F_NESTED, Data: attrs(t,
			netlink.Attribute{Type: tcaCakeBaseRate64, Data: u64(0)})},
	)...))
	if u.Rate != nil {
		t.Errorf("unlimited cake has rate %+v", u.Rate)
	}
}

func TestDecodeHtbClassAndFifo(t *testing.T) {
	opt := append(ratespecBytes(1250000, 0, 1), ratespecBytes(2500000, 0, 1)...)
	opt = append(opt, make([]byte, 20)...)
	c, err := decodeClass(append(tcmsg(4, 0x10010, 0x10000), attrs(t,
		netlink.Attribute{Type: tcaKind, Data: []byte("htb\x00")},
		netlink.Attribute{Type: tcaOptions | unix.NLA_F_NESTED, Data: attrs(t, netlink.Attribute{Type: tcaHtbParms, Data: opt})},
	)...))
	if err != nil || c.Rate == nil || c.Ceil == nil || c.Rate.BitsPerSecond() != 10e6 || c.Ceil.BitsPerSecond() != 20e6 || rtnl.Handle(c.Handle) != "1:10" || rtnl.Handle(c.Parent) != "1:" {
		t.Fatalf("htb class: %+v rate %+v ceil %+v, %v", c, c.Rate, c.Ceil, err)
	}
	f, err := decodeQdisc(append(tcmsg(4, 0x20000, 0x10010), attrs(t,
		netlink.Attribute{Type: tcaKind, Data: []byte("pfifo\x00")},
		netlink.Attribute{Type: tcaOptions, Data: u32(100)},
	)...))
	if err != nil || f.Limit != 100 || f.LimitUnit != "packets" || f.Root() {
		t.Fatalf("pfifo: %+v, %v", f, err)
	}
}
