package traffic

import (
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"linerate/internal/testenv"
)

// a — r — b, every veth at MTU 9000: the probe from a to b carries 9000.
// With r's side toward b at 1500, r answers the probe with fragmentation
// needed and the probe says 1500; with a's own side at 1500, a sends no
// more than that.
func TestProbePathMTU(t *testing.T) {
	a, r, b := testenv.NewNetNS(t), testenv.NewNetNS(t), testenv.NewNetNS(t)
	testenv.Veth(t, a, "a0", r, "r0", 1)
	testenv.Veth(t, r, "r1", b, "b0", 1)
	a.AddAddr(t, "a0", "10.77.1.1/24")
	r.AddAddr(t, "r0", "10.77.1.2/24")
	r.AddAddr(t, "r1", "10.77.2.2/24")
	b.AddAddr(t, "b0", "10.77.2.1/24")
	setMTU := func(ns *testenv.NetNS, iface string, mtu int) {
		t.Helper()
		h := ns.Netlink(t)
		l, err := h.LinkByName(iface)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.LinkSetMTU(l, mtu); err != nil {
			t.Fatalf("mtu %s %d: %v", iface, mtu, err)
		}
	}
	for _, e := range []struct {
		ns    *testenv.NetNS
		iface string
	}{{a, "a0"}, {r, "r0"}, {r, "r1"}, {b, "b0"}} {
		setMTU(e.ns, e.iface, 9000)
	}
	for _, e := range []struct {
		ns *testenv.NetNS
		gw string
	}{{a, "10.77.1.2"}, {b, "10.77.2.2"}} {
		if err := e.ns.Netlink(t).RouteAdd(&netlink.Route{Gw: net.ParseIP(e.gw)}); err != nil {
			t.Fatalf("default route via %s: %v", e.gw, err)
		}
	}
	if err := r.Do(func() error { return os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1"), 0) }); err != nil {
		t.Fatal(err)
	}
	peer := netip.MustParseAddrPort("10.77.2.1:9")
	probe := func(want int) {
		t.Helper()
		var got int
		err := a.Do(func() (err error) {
			got, err = ProbePathMTU(netip.Addr{}, peer, 100*time.Millisecond)
			return err
		})
		if err != nil || got != want {
			t.Fatalf("probe: %d, %v; want %d", got, err, want)
		}
	}
	probe(9000)
	if err := a.Do(func() error {
		p, err := ProbePath(netip.Addr{}, peer, 100*time.Millisecond)
		if err != nil || p.Iface != "a0" || p.Local != netip.MustParseAddr("10.77.1.1") {
			t.Errorf("ProbePath: %+v, %v; want a0 10.77.1.1", p, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	setMTU(r, "r1", 1500) // a hop narrower than both ends
	probe(1500)
	setMTU(a, "a0", 1500) // this end
	probe(1500)
}
