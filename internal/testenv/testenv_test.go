package testenv

import "testing"

func TestNetNSAndVeth(t *testing.T) {
	a := NewNetNS(t)
	b := NewNetNS(t)
	Veth(t, a, "va", b, "vb", 2)
	l, err := b.Netlink(t).LinkByName("vb")
	if err != nil {
		t.Fatal(err)
	}
	if l.Attrs().NumRxQueues != 2 {
		t.Errorf("vb has %d rx queues, want 2", l.Attrs().NumRxQueues)
	}
	if l.Attrs().RawFlags&1 == 0 { // IFF_UP
		t.Errorf("vb not up")
	}
}
