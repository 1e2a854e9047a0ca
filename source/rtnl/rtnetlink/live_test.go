package rtnetlink

import (
	"net/netip"
	"testing"

	"github.com/vishvananda/netlink"

	"linerate/internal/testenv"
	"linerate/source/rtnl"
)

// shapedPair makes two namespaces joined by a veth, a (10.77.0.1) and b
// (10.77.0.2), with a tbf of the given rate and byte limit on a's end.
func shapedPair(t *testing.T, rate uint64, limit uint32) (a, b *testenv.NetNS) {
	a, b = testenv.NewNetNS(t), testenv.NewNetNS(t)
	testenv.Veth(t, a, "va", b, "vb", 1)
	a.AddAddr(t, "va", "10.77.0.1/24")
	b.AddAddr(t, "vb", "10.77.0.2/24")
	h := a.Netlink(t)
	l, err := h.LinkByName("va")
	if err != nil {
		t.Fatal(err)
	}
	tbf := &netlink.Tbf{
		QdiscAttrs: netlink.QdiscAttrs{LinkIndex: l.Attrs().Index, Handle: netlink.MakeHandle(1, 0), Parent: netlink.HANDLE_ROOT},
		Rate:       rate / 8, Limit: limit, Buffer: burstTicks(3000, rate/8),
	}
	if err := h.QdiscAdd(tbf); err != nil {
		t.Fatalf("add tbf: %v", err)
	}
	return a, b
}

// burstTicks is tbf's buffer for a burst of n bytes at rate bytes per
// second, in the psched ticks of 64 ns the kernel reads it in
// (PSCHED_TICKS2NS in include/net/pkt_sched.h).
func burstTicks(n, rate uint64) uint32 { return uint32(n * 1e9 / rate / 64) }

func TestLiveTbfDrops(t *testing.T) {
	testenv.RequireRoot(t)
	a, b := shapedPair(t, 8e6, 4000)
	c, err := Dial(int(a.Handle))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	cb, err := Dial(int(b.Handle))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cb.Close() })

	find := func() (rtnl.Qdisc, rtnl.Link) {
		qs, err := c.Qdiscs()
		if err != nil {
			t.Fatal(err)
		}
		links, err := c.Links()
		if err != nil {
			t.Fatal(err)
		}
		var q rtnl.Qdisc
		for _, x := range qs {
			if x.Iface == "va" && x.Root() {
				q = x
			}
		}
		for _, l := range links {
			if l.Name == "va" {
				return q, l
			}
		}
		t.Fatal("no va")
		return q, rtnl.Link{}
	}
	q0, l0 := find()
	if q0.Kind != "tbf" || q0.Rate == nil || q0.Rate.BitsPerSecond() != 8e6 || q0.Limit != 4000 || l0.Kind != "veth" {
		t.Fatalf("tbf read back as %+v rate %+v on %+v", q0, q0.Rate, l0)
	}
	if q0.Burst < 2990 || q0.Burst > 3010 {
		t.Errorf("tbf bucket read back as %d bytes, set to 3000", q0.Burst)
	}
	sink := b.ListenUDP(t, "10.77.0.2:6000", 4<<20)
	flush := &testenv.Flush{Sink: b.ListenUDP(t, "10.77.0.2:6001", 0), Before: testenv.QdiscsDrained(t, a)}
	a.SendUDP(t, netip.MustParseAddrPort("10.77.0.2:6001"), 1, 8, flush) // resolve ARP first
	q1, l1 := find()
	sent := a.SendUDP(t, sink.Addr, 300, 1000, flush)
	got := sink.Drain(t)
	q2, l2 := find()
	drops := q2.Stats.Sub(q1.Stats).Drops
	t.Logf("sent %d, received %d, tbf drops %d, overlimits %d, va tx_dropped %d",
		sent, got, drops, q2.Stats.Sub(q1.Stats).Overlimits, l2.Stats.Sub(l1.Stats).TxDropped)
	if drops == 0 || uint64(sent-got) != drops {
		t.Errorf("tbf dropped %d, want sent − received = %d", drops, sent-got)
	}
}

func TestLiveHtbClasses(t *testing.T) {
	testenv.RequireRoot(t)
	a := testenv.NewNetNS(t)
	b := testenv.NewNetNS(t)
	testenv.Veth(t, a, "va", b, "vb", 1)
	h := a.Netlink(t)
	l, err := h.LinkByName("va")
	if err != nil {
		t.Fatal(err)
	}
	idx := l.Attrs().Index
	qa := netlink.QdiscAttrs{LinkIndex: idx, Handle: netlink.MakeHandle(1, 0), Parent: netlink.HANDLE_ROOT}
	if err := h.QdiscAdd(netlink.NewHtb(qa)); err != nil {
		t.Fatal(err)
	}
	cls := netlink.NewHtbClass(netlink.ClassAttrs{LinkIndex: idx, Parent: netlink.MakeHandle(1, 0), Handle: netlink.MakeHandle(1, 0x10)},
		netlink.HtbClassAttrs{Rate: 50e6, Ceil: 100e6, Buffer: 1600, Cbuffer: 1600})
	if err := h.ClassAdd(cls); err != nil {
		t.Fatal(err)
	}
	c, err := Dial(int(a.Handle))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cs, err := c.Classes(idx)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 || cs[0].Iface != "va" || rtnl.Handle(cs[0].Handle) != "1:10" || cs[0].Rate == nil ||
		cs[0].Rate.BitsPerSecond() != 50e6 || cs[0].Ceil.BitsPerSecond() != 100e6 {
		t.Fatalf("classes = %+v", cs)
	}
}
