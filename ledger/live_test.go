package ledger

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"testing"

	"github.com/vishvananda/netlink"

	"linerate/box"
	"linerate/box/netnsread"
	"linerate/internal/testenv"
	"linerate/source"
	"linerate/source/skbdrop"
)

// routed is a test network of three namespaces: client (c0 10.80.1.1) —
// router (r0 10.80.1.254, r1 10.80.2.254, forwarding) — server (s0
// 10.80.2.1), with a drop-counter reader on each.
type routed struct {
	client, router, server *testenv.NetNS
	readers                []*netnsread.Reader
	hosts                  []Host
	flush                  *testenv.Flush
}

func newRouted(t *testing.T, reasons *skbdrop.Counter) *routed {
	t.Helper()
	r := &routed{client: testenv.NewNetNS(t), router: testenv.NewNetNS(t), server: testenv.NewNetNS(t)}
	testenv.Veth(t, r.client, "c0", r.router, "r0", 1)
	testenv.Veth(t, r.router, "r1", r.server, "s0", 1)
	r.client.AddAddr(t, "c0", "10.80.1.1/24")
	r.router.AddAddr(t, "r0", "10.80.1.254/24")
	r.router.AddAddr(t, "r1", "10.80.2.254/24")
	r.server.AddAddr(t, "s0", "10.80.2.1/24")
	for _, e := range []struct {
		ns  *testenv.NetNS
		dev string
		gw  string
	}{{r.client, "c0", "10.80.1.254"}, {r.server, "s0", "10.80.2.254"}} {
		h := e.ns.Netlink(t)
		l, err := h.LinkByName(e.dev)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.RouteAdd(&netlink.Route{LinkIndex: l.Attrs().Index, Gw: net.ParseIP(e.gw)}); err != nil {
			t.Fatalf("default route in %s: %v", e.ns.Name, err)
		}
	}
	err := r.router.Do(func() error {
		return os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1"), 0)
	})
	if err != nil {
		t.Fatal(err)
	}
	opt := netnsread.Options{Reasons: reasons}
	for _, h := range []struct {
		ns     *testenv.NetNS
		name   string
		side   Side
		ifaces []string
	}{{r.client, "client", Sender, []string{"c0"}}, {r.router, "router", Path, []string{"r0", "r1"}}, {r.server, "server", Receiver, []string{"s0"}}} {
		src, err := source.NewLiveNetns(h.ns.Name)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { src.Close() })
		rd, err := netnsread.New(src, opt)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rd.Close() })
		r.readers = append(r.readers, rd)
		r.hosts = append(r.hosts, Host{Name: h.name, Side: h.side, Ifaces: h.ifaces})
	}
	r.flush = &testenv.Flush{Sink: r.server.ListenUDP(t, "10.80.2.1:5300", 0), Before: testenv.QdiscsDrained(t, r.client, r.router)}
	// Resolve every neighbour before anything is counted.
	r.client.SendUDP(t, r.flush.Sink.Addr, 1, 8, r.flush)
	return r
}

func (r *routed) snapshot(t *testing.T) []box.Drops {
	t.Helper()
	var out []box.Drops
	for _, rd := range r.readers {
		d, err := rd.Drops()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

// run sends count datagrams of 64 bytes to port on the server (a sink
// there when sink is not nil), and builds the ledger of it.
func (r *routed) run(t *testing.T, port uint16, count int, sink *testenv.UDPSink) Ledger {
	t.Helper()
	before := r.snapshot(t)
	sent := r.client.SendUDP(t, netip.AddrPortFrom(netip.MustParseAddr("10.80.2.1"), port), count, 64, r.flush)
	received := 0
	if sink != nil {
		received = sink.Drain(t)
	}
	after := r.snapshot(t)
	hosts := append([]Host(nil), r.hosts...)
	for i := range hosts {
		hosts[i].Delta = box.DropDelta(before[i], after[i])
	}
	// SendUDP counts the datagrams the kernel accepted, as the traffic
	// engine does: the others were refused.
	l := Build(Test{Sent: uint64(sent), Received: uint64(received), Refused: uint64(count - sent)}, hosts)
	t.Logf("sent %d, received %d, lost %d", sent, received, l.Lost)
	for _, e := range l.Entries {
		t.Logf("  %-8s %-9s %-14s %6d  %v", e.Host, e.Side, e.Place, e.Packets, e.Evidence)
	}
	for _, n := range l.Notes {
		t.Logf("  note: %s", n)
	}
	return l
}

func addTbf(t *testing.T, ns *testenv.NetNS, dev string, bitsPerSecond uint64, limit uint32) {
	t.Helper()
	h := ns.Netlink(t)
	l, err := h.LinkByName(dev)
	if err != nil {
		t.Fatal(err)
	}
	rate := bitsPerSecond / 8
	tbf := &netlink.Tbf{
		QdiscAttrs: netlink.QdiscAttrs{LinkIndex: l.Attrs().Index, Handle: netlink.MakeHandle(1, 0), Parent: netlink.HANDLE_ROOT},
		Rate:       rate, Limit: limit,
		// A burst of 3000 bytes in the kernel's psched ticks of 64 ns.
		Buffer: uint32(3000 * 1e9 / rate / 64),
	}
	if err := h.QdiscAdd(tbf); err != nil {
		t.Fatalf("tbf on %s: %v", dev, err)
	}
}

// want checks that host's place holds n packets within Tolerance of what
// was sent.
func want(t *testing.T, l Ledger, host string, p Place, n uint64) {
	t.Helper()
	var got uint64
	for _, e := range l.Entries {
		if e.Host == host && e.Place == p {
			got += e.Packets
		}
	}
	if diff := float64(got) - float64(n); diff > Tolerance*float64(l.Sent) || -diff > Tolerance*float64(l.Sent) {
		t.Errorf("%s %s: %d packets, want %d", host, p, got, n)
	}
}

// balanced checks the entries add up to the loss, almost nothing is
// unaccounted, and only the places expected hold packets.
func balanced(t *testing.T, l Ledger, places ...Place) {
	t.Helper()
	tol := uint64(Tolerance * float64(l.Sent))
	if !l.Balanced() || l.Unaccounted() > tol {
		t.Errorf("ledger does not balance: lost %d, placed %d, unaccounted %d, excess %d", l.Lost, l.Placed(), l.Unaccounted(), l.Excess)
	}
	var stray uint64
	for _, e := range l.Entries {
		ok := e.Place == Unaccounted
		for _, p := range places {
			ok = ok || e.Place == p
		}
		if !ok {
			stray += e.Packets
		}
	}
	if stray > tol {
		t.Errorf("%d packets placed where no drop was made", stray)
	}
}

func startReasons(t *testing.T) *skbdrop.Counter {
	t.Helper()
	c, err := skbdrop.Start()
	if err != nil {
		t.Fatalf("drop reasons (this kernel has them): %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

const count = 2000

func TestLiveLedgerNftablesOneInTen(t *testing.T) {
	testenv.RequireRoot(t)
	r := newRouted(t, startReasons(t))
	r.router.DropUDP(t, testenv.HookForward, 5201, 10)
	sink := r.server.ListenUDP(t, "10.80.2.1:5201", 16<<20)
	l := r.run(t, 5201, count, sink)
	want(t, l, "router", Netfilter, count/10)
	balanced(t, l, Netfilter)
}

func TestLiveLedgerClosedPort(t *testing.T) {
	testenv.RequireRoot(t)
	r := newRouted(t, startReasons(t))
	l := r.run(t, 5999, count, nil)
	want(t, l, "server", NoSocket, count)
	balanced(t, l, NoSocket)
}

func TestLiveLedgerTinyReceiveBuffer(t *testing.T) {
	testenv.RequireRoot(t)
	r := newRouted(t, startReasons(t))
	sink := r.server.ListenUDP(t, "10.80.2.1:5201", 1)
	l := r.run(t, 5201, count, sink)
	want(t, l, "server", SocketBuffer, l.Lost)
	if l.Lost < count/2 {
		t.Errorf("only %d lost: the tiny buffer did not overflow", l.Lost)
	}
	balanced(t, l, SocketBuffer)
}

// TestLiveLedgerShaper overflows a tbf on the router's egress, then on
// the sender's: the drops are the router's qdisc, or the sender's (and
// then not also its socket's, though they count as SndbufErrors too).
func TestLiveLedgerShaper(t *testing.T) {
	testenv.RequireRoot(t)
	for _, c := range []struct {
		host  string
		dev   string
		place Place
	}{{"router", "r1", Qdisc}, {"client", "c0", SenderQdisc}} {
		t.Run(c.host, func(t *testing.T) {
			r := newRouted(t, startReasons(t))
			ns := map[string]*testenv.NetNS{"router": r.router, "client": r.client}[c.host]
			addTbf(t, ns, c.dev, 10e6, 6000)
			sink := r.server.ListenUDP(t, "10.80.2.1:5201", 16<<20)
			l := r.run(t, 5201, count, sink)
			if l.Lost == 0 {
				t.Fatal("the shaper dropped nothing")
			}
			want(t, l, c.host, c.place, l.Lost)
			want(t, l, "client", SenderSocket, 0)
			balanced(t, l, c.place)
		})
	}
}

// TestLiveLedgerAllAtOnce drops at four places along one path and without
// drop reasons, from the counters alone: each place must still hold its
// own drops, and none twice.
func TestLiveLedgerAllAtOnce(t *testing.T) {
	testenv.RequireRoot(t)
	for _, withReasons := range []bool{true, false} {
		t.Run(fmt.Sprintf("reasons=%v", withReasons), func(t *testing.T) {
			var reasons *skbdrop.Counter
			if withReasons {
				reasons = startReasons(t)
			}
			r := newRouted(t, reasons)
			r.client.DropUDP(t, testenv.HookOutput, 5201, 10)
			// 5 Mbit/s (about 5,900 of these frames a second): a sender slowed
			// down by a busy machine still outruns it, and the queue overflows.
			addTbf(t, r.router, "r1", 5e6, 20000)
			r.server.DropUDP(t, testenv.HookInput, 5201, 7)
			sink := r.server.ListenUDP(t, "10.80.2.1:5201", 1)
			l := r.run(t, 5201, count, sink)
			if l.Sent != count-count/10 {
				t.Errorf("sent %d: the client's firewall should refuse one send in ten (EPERM)", l.Sent)
			}
			want(t, l, "client", Netfilter, 0)
			balanced(t, l, Netfilter, Qdisc, SocketBuffer)
			var q, sb, nf uint64
			for _, e := range l.Entries {
				switch {
				case e.Host == "router" && e.Place == Qdisc:
					q += e.Packets
				case e.Host == "server" && e.Place == SocketBuffer:
					sb += e.Packets
				case e.Host == "server" && e.Place == Netfilter:
					nf += e.Packets
				}
			}
			if q == 0 || sb == 0 || nf == 0 {
				t.Errorf("router qdisc %d, server netfilter %d, server socket buffer %d: each should hold drops", q, nf, sb)
			}
			if !withReasons && len(l.Notes) == 0 {
				t.Error("no note that drop reasons were not counted")
			}
		})
	}
}
