package ceiling

import (
	"strings"
	"testing"

	"linerate/box"
	"linerate/source/rtnl"
)

func TestPathBuffer(t *testing.T) {
	root := func(kind string, limit uint32, unit string, burst uint32) rtnl.Qdisc {
		return rtnl.Qdisc{Node: rtnl.Node{Kind: kind, Handle: 0x10000, Parent: rtnl.HandleRoot}, Limit: limit, LimitUnit: unit, Burst: burst,
			Rate: &rtnl.Rate{BytesPerSecond: 12500000}}
	}
	// The lab's 100 Mbit/s cap: a queue of 256,072 bytes and a bucket of
	// 131,072 bytes hold 387,144 bytes, 255.7 frames of 1518 bytes (1514
	// to the kernel).
	shaped := box.PathIface{Host: "client", Iface: "lra", Kind: "veth", Qdiscs: []rtnl.Qdisc{root("tbf", 256072, "bytes", 131072)}}
	lim := PathLimit{Host: "client", Iface: "lra"}
	b, ok := PathBuffer([]box.PathIface{{Host: "server", Iface: "lra"}, shaped}, lim, SingleFrame(1518))
	if !ok || !near(b.Frames, 387144.0/1514) || !strings.Contains(b.What, "tbf 1: on lra in client") || !strings.Contains(b.What, "bucket 131,072 B") {
		t.Errorf("tbf: %+v, %v", b, ok)
	}
	// A queue counted in packets holds that many frames of any size.
	fifo := box.PathIface{Host: "client", Iface: "eth0", Qdiscs: []rtnl.Qdisc{root("pfifo", 1000, "packets", 0)}}
	if b, ok := PathBuffer([]box.PathIface{fifo}, PathLimit{Host: "client", Iface: "eth0"}, SingleFrame(64)); !ok || b.Frames != 1000 {
		t.Errorf("pfifo: %+v, %v", b, ok)
	}
	// Not known: the limit's interface is not on the path, its root
	// qdisc's queue was not read, or only a child's was.
	child := root("bfifo", 3000, "bytes", 0)
	child.Parent = 0x10001
	for name, p := range map[string]box.PathIface{
		"elsewhere": {Host: "server", Iface: "lra", Qdiscs: shaped.Qdiscs},
		"htb":       {Host: "client", Iface: "lra", Qdiscs: []rtnl.Qdisc{root("htb", 0, "", 0)}},
		"child":     {Host: "client", Iface: "lra", Qdiscs: []rtnl.Qdisc{root("htb", 0, "", 0), child}},
	} {
		if b, ok := PathBuffer([]box.PathIface{p}, lim, SingleFrame(1518)); ok {
			t.Errorf("%s: %+v, want not known", name, b)
		}
	}
}
