package results

import (
	"math"
	"testing"

	"linerate/box"
	"linerate/ceiling"
	"linerate/source/rtnl"
	"linerate/wire"
)

// TestSearchBuffering: the buffering ahead of a tbf on the client's veth
// is its queue and bucket when the client sends through it; none when the
// client receives (the tbf holds the other direction) or sends below its
// qdiscs (the ring).
func TestSearchBuffering(t *testing.T) {
	tbf := rtnl.Qdisc{Node: rtnl.Node{Kind: "tbf", Handle: 0x10000, Parent: rtnl.HandleRoot},
		Rate: &rtnl.Rate{BytesPerSecond: 12500000}, Limit: 256072, LimitUnit: "bytes", Burst: 131072}
	res := &Result{Spec: wire.Spec{Proto: wire.UDP, Direction: wire.Forward}, Drops: []EndDrops{
		{Side: SideClient, Target: -1, Path: []box.PathIface{{Host: "client", Iface: "lra", Kind: "veth", Qdiscs: []rtnl.Qdisc{tbf}}}},
		{Side: SideServer, Path: []box.PathIface{{Host: "server", Iface: "lrb", Kind: "veth"}}},
	}}
	lim, ok := PathCeiling(res, 1518)
	if !ok || lim.Iface != "lra" {
		t.Fatalf("ceiling %+v, %v: want the tbf on lra", lim, ok)
	}
	b := SearchBuffering(res, lim, ceiling.SingleFrame(1518))
	if want := (256072.0 + 131072) / 1514; b == nil || math.Abs(b.Frames-want) > 1e-9 || b.CeilingFPS != lim.FPS {
		t.Fatalf("buffering %+v, want %.1f frames draining at %.0f", b, want, lim.FPS)
	}
	res.Spec.Direction = wire.Reverse
	if b := SearchBuffering(res, lim, ceiling.SingleFrame(1518)); b != nil {
		t.Errorf("client receiving: buffering %+v, want none", b)
	}
	res.Spec.Direction, res.Engine = wire.Forward, string(EngineRing)
	if b := SearchBuffering(res, lim, ceiling.SingleFrame(1518)); b != nil {
		t.Errorf("ring below the qdiscs: buffering %+v, want none", b)
	}
}
