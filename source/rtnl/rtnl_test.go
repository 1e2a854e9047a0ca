package rtnl

import "testing"

func TestQdiscStatsSubWraps(t *testing.T) {
	a := QdiscStats{Drops: 0xfffffff0, Packets: 10}
	b := QdiscStats{Drops: 0x10, Packets: 30, Qlen: 4}
	d := b.Sub(a)
	if d.Drops != 0x20 || d.Packets != 20 || d.Qlen != 4 {
		t.Errorf("Sub = %+v", d)
	}
	for h, want := range map[uint32]string{HandleRoot: "root", HandleIngress: "ingress", 0x10000: "1:", 0x10010: "1:10"} {
		if got := Handle(h); got != want {
			t.Errorf("Handle(%#x) = %q, want %q", h, got, want)
		}
	}
}
