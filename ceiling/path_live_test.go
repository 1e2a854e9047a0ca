package ceiling

import (
	"testing"

	"github.com/vishvananda/netlink"

	"linerate/box"
	"linerate/box/netnsread"
	"linerate/internal/testenv"
	"linerate/source"
)

// TestLivePathCeilingTbf reads a veth shaped by a 100 Mbit/s tbf and finds
// the shaper, not the veth's nominal speed, as the path's limit.
func TestLivePathCeilingTbf(t *testing.T) {
	testenv.RequireRoot(t)
	a, b := testenv.NewNetNS(t), testenv.NewNetNS(t)
	testenv.Veth(t, a, "va", b, "vb", 1)
	h := a.Netlink(t)
	l, err := h.LinkByName("va")
	if err != nil {
		t.Fatal(err)
	}
	const rate = 100e6 / 8
	err = h.QdiscAdd(&netlink.Tbf{
		QdiscAttrs: netlink.QdiscAttrs{LinkIndex: l.Attrs().Index, Handle: netlink.MakeHandle(1, 0), Parent: netlink.HANDLE_ROOT},
		Rate:       rate, Limit: 30000, Buffer: uint32(16000 * 1e9 / rate / 64), // 16 kB burst in 64 ns ticks
	})
	if err != nil {
		t.Fatal(err)
	}
	var path []box.PathIface
	for _, e := range []struct {
		ns    *testenv.NetNS
		host  string
		iface string
	}{{a, "client", "va"}, {b, "server", "vb"}} {
		src, err := source.NewLiveNetns(e.ns.Name)
		if err != nil {
			t.Fatal(err)
		}
		defer src.Close()
		r, err := netnsread.New(src, netnsread.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		p, err := r.Path(e.host, e.iface)
		if err != nil {
			t.Fatal(err)
		}
		path = append(path, p...)
		if _, err := r.Path(e.host, "nonesuch"); err == nil {
			t.Error("a missing interface gave no error")
		}
	}
	if path[0].Kind != "veth" || len(path[0].Qdiscs) == 0 {
		t.Fatalf("path = %+v", path)
	}
	lim, ok := PathCeiling(path, SingleFrame(1518))
	if !ok || lim.By != LimitShaper || lim.Host != "client" || lim.Iface != "va" || lim.RateBps != 100e6 {
		t.Fatalf("limit = %+v, %v", lim, ok)
	}
	if want := rate / 1514.0; !near(lim.FPS, want) {
		t.Errorf("fps = %v, want %v", lim.FPS, want)
	}
	t.Logf("%s on %s/%s: %.1f fps of 1518 B, %.1f Mb/s of frames, %.1f Mb/s on a wire", lim.What, lim.Host, lim.Iface, lim.FPS, lim.L2Bps/1e6, lim.LineBps/1e6)
}
