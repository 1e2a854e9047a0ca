package ceiling

import (
	"testing"

	"linerate/box"
	"linerate/source/rtnl"
)

func TestMix(t *testing.T) {
	if got := SimpleIMIX.MeanBytes(); !near(got, 4246.0/12) {
		t.Errorf("IMIX mean %v, want 353.83", got)
	}
	// 1 Gb/s of 64-byte frames: 1,488,095.2 frames per second.
	if got := SingleFrame(64).LineFPS(1e9); !near(got, 1e9/(84*8)) {
		t.Errorf("64-byte line rate %v", got)
	}
	ms, err := ParseMixes("64, 128,256,512,1024,1280,1518,IMIX")
	if err != nil || len(ms) != 8 || ms[7].Name != "imix" || ms[0].Parts[0].Bytes != 64 {
		t.Fatalf("ParseMixes = %+v, %v", ms, err)
	}
	for _, bad := range []string{"63", "64,64", "big", "", "imix,imix", "70000"} {
		if _, err := ParseMixes(bad); err == nil {
			t.Errorf("ParseMixes(%q): no error", bad)
		}
	}
}

func TestShaperFPS(t *testing.T) {
	r := rtnl.Rate{BytesPerSecond: 12500000} // 100 Mbit/s
	// A 1518-byte frame is 1514 bytes to the shaper (no FCS).
	if got := ShaperFPS(r, SingleFrame(1518)); !near(got, 12500000.0/1514) {
		t.Errorf("1518: %v", got)
	}
	// Overhead 24 and MPU 84 (tc ... overhead 24 mpu 84): 64-byte frames
	// count 84.
	r2 := rtnl.Rate{BytesPerSecond: 12500000, Overhead: 24, MPU: 84}
	if got := ShaperFPS(r2, SingleFrame(64)); !near(got, 12500000.0/84) {
		t.Errorf("64 with overhead: %v", got)
	}
	// ATM: 60 bytes take two cells, 106 bytes.
	r3 := rtnl.Rate{BytesPerSecond: 1e6, Linklayer: rtnl.LinklayerATM}
	if got := ShaperFPS(r3, SingleFrame(64)); !near(got, 1e6/106) {
		t.Errorf("ATM: %v", got)
	}
	if ShaperFPS(rtnl.Rate{}, SingleFrame(64)) != 0 {
		t.Error("a zero rate carries frames")
	}
}

func TestPathCeiling(t *testing.T) {
	tbf := func(bps uint64) rtnl.Qdisc {
		return rtnl.Qdisc{Node: rtnl.Node{Kind: "tbf", Handle: 0x10000, Parent: 0xFFFFFFFF}, Rate: &rtnl.Rate{BytesPerSecond: bps / 8}}
	}
	htbRoot := rtnl.Qdisc{Node: rtnl.Node{Kind: "htb", Handle: 0x10000, Parent: 0xFFFFFFFF}}
	class := func(h uint32, parent uint32, ceil uint64) rtnl.Class {
		return rtnl.Class{Node: rtnl.Node{Kind: "htb", Handle: h, Parent: parent}, Rate: &rtnl.Rate{BytesPerSecond: ceil / 16}, Ceil: &rtnl.Rate{BytesPerSecond: ceil / 8}}
	}
	for _, c := range []struct {
		name   string
		path   []box.PathIface
		mix    Mix
		ok     bool
		by     string
		iface  string
		fps    float64
		lineBp float64
	}{
		{"veth only: no limit", []box.PathIface{{Host: "c", Iface: "c0", Kind: "veth", SpeedMbps: 10000}, {Host: "s", Iface: "lo", Loopback: true}}, SingleFrame(64), false, "", "", 0, 0},
		{"1G link", []box.PathIface{{Host: "pi", Iface: "eth0", SpeedMbps: 1000}, {Host: "x", Iface: "eth1", SpeedMbps: 2500}}, SingleFrame(64), true, LimitLink, "eth0", 1e9 / 672, 1e9},
		{"shaper below the link", []box.PathIface{{Host: "r", Iface: "eth0", SpeedMbps: 1000, Qdiscs: []rtnl.Qdisc{tbf(100e6)}}}, SingleFrame(1518), true, LimitShaper, "eth0", 12500000.0 / 1514, 12500000.0 / 1514 * 1538 * 8},
		{"htb: the fastest top-level ceiling", []box.PathIface{{Host: "r", Iface: "wan", Qdiscs: []rtnl.Qdisc{htbRoot},
			Classes: []rtnl.Class{class(0x10010, 0x10000, 20e6), class(0x10020, 0x10000, 50e6), class(0x10021, 0x10020, 400e6)}}}, SingleFrame(1518), true, LimitShaper, "wan", 50e6 / 8 / 1514, 50e6 / 8 / 1514 * 1538 * 8},
		{"imix on a link", []box.PathIface{{Host: "a", Iface: "eth0", SpeedMbps: 1000}}, SimpleIMIX, true, LimitLink, "eth0", 1e9 / ((4246.0/12 + 20) * 8), 1e9},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, ok := PathCeiling(c.path, c.mix)
			if ok != c.ok {
				t.Fatalf("ok = %v, limit %+v", ok, l)
			}
			if !ok {
				return
			}
			if l.By != c.by || l.Iface != c.iface || !near(l.FPS, c.fps) || !near(l.LineBps, c.lineBp) || !near(l.L2Bps, c.fps*c.mix.MeanBytes()*8) {
				t.Errorf("limit = %+v, want %s on %s at %.1f fps, line %.0f", l, c.by, c.iface, c.fps, c.lineBp)
			}
		})
	}
}
