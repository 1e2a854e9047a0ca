package results

import (
	"strings"
	"testing"

	"linerate/box"
	"linerate/source/rtnl"
	"linerate/wire"
)

// TestVerdictBidirAtLink: bench rrul (TCP both ways at once) in a pair
// lab capped at 100 Mbit/s each way reaches 94.5 Mb/s each way; the
// verdict names the cap of each way (the client's tbf up, the server's
// down), not "cannot tell". A way well below its cap is not called link.
func TestVerdictBidirAtLink(t *testing.T) {
	tbf := func(iface string) rtnl.Qdisc {
		return rtnl.Qdisc{Node: rtnl.Node{Iface: iface, Kind: "tbf", Handle: 0x10000, Parent: rtnl.HandleRoot},
			Rate: &rtnl.Rate{BytesPerSecond: 100e6 / 8}}
	}
	drops := []EndDrops{
		{Side: SideClient, Target: -1, Ifaces: []string{"b"}, Path: []box.PathIface{{Host: "client", Iface: "b", Kind: "veth", Qdiscs: []rtnl.Qdisc{tbf("b")}}}},
		{Side: SideServer, Target: 0, Ifaces: []string{"a"}, Path: []box.PathIface{{Host: "server", Iface: "a", Kind: "veth", Qdiscs: []rtnl.Qdisc{tbf("a")}}}},
	}
	// What the lab's rrul measured: 1448-byte segments, about 8,100 a
	// second each way (the shaper lets about 8,229 of 1518-byte frames
	// through).
	way := func(segs float64) *Totals {
		t := Totals{Seconds: 3, SentPackets: uint64(segs * 3), ReceivedPackets: uint64(segs * 3),
			SentBytes: uint64(segs * 3 * 1448), ReceivedBytes: uint64(segs * 3 * 1448)}
		t.rates()
		return &t
	}
	for _, c := range []struct {
		name     string
		up, down float64
		want     Limit
		why      []string
	}{
		{"both ways at the cap", 8098, 8038, LimitLink, []string{"up (client → server) received 8098 segments/s", "tbf 1: 100M on client b",
			"down (server → client) received 8038 segments/s", "tbf 1: 100M on server a"}},
		{"down at the cap, up held back", 3000, 8100, LimitLink, []string{"down (server → client)", "on server a"}},
		{"neither near the cap", 3000, 3000, LimitUnknown, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := &Result{Spec: wire.Spec{Proto: wire.TCP, Direction: wire.Bidir}, Engine: "socket", Drops: drops,
				Targets: []TargetResult{{Address: "10.231.1.2:7557", Forward: way(c.up), Reverse: way(c.down)}}}
			res.Summary.Totals.Add(*way(c.up))
			res.Summary.Totals.Add(*way(c.down))
			Verdict(res, []ThreadCPU{{Role: "tcp-send", Busy: 0.02}, {Role: "tcp-recv", Busy: 0.02}})
			s := res.Summary
			t.Logf("limited by %q: %s", s.LimitedBy, s.LimitedWhy)
			if s.LimitedBy != c.want {
				t.Fatalf("limited by %q (%s), want %q", s.LimitedBy, s.LimitedWhy, c.want)
			}
			for _, w := range c.why {
				if !strings.Contains(s.LimitedWhy, w) {
					t.Errorf("why lacks %q: %s", w, s.LimitedWhy)
				}
			}
			if c.want == LimitUnknown && strings.Contains(s.LimitedWhy, "ceiling") {
				t.Errorf("a way well below its cap named: %s", s.LimitedWhy)
			}
		})
	}
}
