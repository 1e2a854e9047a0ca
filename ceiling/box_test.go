package ceiling

import (
	"strings"
	"testing"

	"linerate/box"
	"linerate/source/ethtool"
)

var igbModes = []string{"10baseT/Half", "10baseT/Full", "100baseT/Half", "100baseT/Full", "1000baseT/Full"}

func nic(name, driver string, mbps int, pci string, path ...string) box.NIC {
	return box.NIC{
		Name: name, Kind: "physical", MTU: 1500, PCIAddr: pci, PCIePath: path,
		Driver: &ethtool.DriverInfo{Driver: driver, BusInfo: pci},
		Link:   &ethtool.LinkInfo{SpeedMbps: mbps, Duplex: "Full", Link: mbps > 0, Supported: igbModes},
	}
}

// cm4 is the Compute Module 4 of seeds/000: the onboard bcmgenet eth0 and
// an Intel I340-T4 (82580, four functions) in the Gen2 x1 slot behind the
// BCM2711 root port, MPS 128 set although everything supports 512.
func cm4() *box.Box {
	rp := "0000:00:00.0"
	b := &box.Box{Meta: box.Meta{Host: "cm4", Source: "test"}}
	b.NICs = append(b.NICs,
		box.NIC{Name: "lo", Kind: "loopback", MTU: 65536},
		box.NIC{Name: "eth0", Kind: "physical", MTU: 1500,
			Driver: &ethtool.DriverInfo{Driver: "bcmgenet"},
			Link:   &ethtool.LinkInfo{SpeedMbps: 1000, Duplex: "Full", Link: true}},
		nic("eth1", "igb", 1000, "0000:01:00.0", "0000:01:00.0", rp),
		nic("eth2", "igb", 1000, "0000:01:00.1", "0000:01:00.1", rp),
		nic("eth3", "igb", 1000, "0000:01:00.2", "0000:01:00.2", rp),
		nic("eth4", "igb", 0, "0000:01:00.3", "0000:01:00.3", rp), // no cable yet
	)
	b.PCIe = append(b.PCIe, box.PCIeDevice{Addr: rp, RootPort: true, Vendor: "0x14e4", Device: "0x2711",
		CurSpeedGTs: 5, CurWidth: 1, MaxSpeedGTs: 5, MaxWidth: 1, MPSSupported: 512, MPS: 128, MRRS: 512})
	for _, fn := range []string{"0", "1", "2", "3"} {
		b.PCIe = append(b.PCIe, box.PCIeDevice{Addr: "0000:01:00." + fn, Upstream: rp, Vendor: "0x8086", Device: "0x150e", Driver: "igb",
			CurSpeedGTs: 5, CurWidth: 1, MaxSpeedGTs: 5, MaxWidth: 4, MPSSupported: 512, MPS: 128, MRRS: 512})
	}
	return b
}

func hasText(list []string, frag string) bool {
	for _, s := range list {
		if strings.Contains(s, frag) {
			return true
		}
	}
	return false
}

func TestForBoxCM4(t *testing.T) {
	r := ForBox(cm4())
	if r.Host != "cm4" || len(r.Assumptions) == 0 {
		t.Errorf("host %q, %d assumptions", r.Host, len(r.Assumptions))
	}
	if len(r.NICs) != 5 {
		t.Fatalf("%d NICs, want 5 (lo left out)", len(r.NICs))
	}
	eth0 := r.NICs[0]
	if eth0.Name != "eth0" || eth0.NotPCIe != "not on PCIe" || eth0.Group != "" || eth0.SpeedBps != 1e9 || eth0.SpeedFrom != "link" {
		t.Errorf("eth0: %+v", eth0)
	}
	if eth0.Small == nil || eth0.Small.PPS != 1_488_095 || eth0.Full == nil || eth0.Full.PPS != 81_274 {
		t.Errorf("eth0 rates: %+v %+v", eth0.Small, eth0.Full)
	}
	eth4 := r.NICs[4]
	if eth4.SpeedBps != 1e9 || eth4.SpeedFrom != "supported modes" || eth4.Group != "0000:00:00.0" {
		t.Errorf("eth4 (link down): %+v", eth4)
	}
	if len(r.Groups) != 1 {
		t.Fatalf("%d groups, want 1", len(r.Groups))
	}
	g := r.Groups[0]
	if g.ID != "0000:00:00.0" || strings.Join(g.NICs, ",") != "eth1,eth2,eth3,eth4" {
		t.Errorf("group %s: %v", g.ID, g.NICs)
	}
	if g.Link == nil || *g.Link != (Link{2, 1}) || g.Bottleneck != "0000:00:00.0 > 0000:01:00" {
		t.Errorf("bottleneck %q link %v", g.Bottleneck, g.Link)
	}
	if g.MPS != 128 || g.MPSSupported != 512 || g.MRRS != 512 || g.PortsBps != 4e9 || g.Frame.Bytes != 1518 {
		t.Errorf("mps %d/%d mrrs %d ports %d frame %d", g.MPS, g.MPSSupported, g.MRRS, g.PortsBps, g.Frame.Bytes)
	}
	if g.Full == nil || g.Small == nil {
		t.Fatalf("no ceiling: %s", g.Unknown)
	}
	// About 3 Gb/s: the seeds' measured ceiling.
	if rx := g.Full.Receive; rx.LineBps < 3e9 || rx.LineBps > 3.5e9 || rx.GoodputBps < 2.9e9 || rx.GoodputBps > 3.2e9 {
		t.Errorf("receive ceiling %.3g line, %.3g goodput", rx.LineBps, rx.GoodputBps)
	}
	if len(g.Warnings) != 2 || !hasText(g.Warnings, "can receive 4 Gb/s") || !hasText(g.Warnings, "can send 4 Gb/s") ||
		!hasText(g.Warnings, "the bus is the ceiling") || !hasText(g.Warnings, "eth1, eth2, eth3, eth4") {
		t.Errorf("warnings: %q", g.Warnings)
	}
	if g.TCP == nil || !hasText(g.Warnings, "(iperf TCP into the box: about 3.08 Gb/s)") {
		t.Errorf("TCP figure %v, warnings %q", g.TCP, g.Warnings)
	}
	if !hasText(g.Notes, "pci=pcie_bus_perf would set 512") {
		t.Errorf("no MPS note: %q", g.Notes)
	}
	if !hasText(g.Notes, "0000:01:00.0 supports Gen2 x4 (5 GT/s) but its link runs at Gen2 x1 (5 GT/s): 0000:00:00.0") {
		t.Errorf("no narrow-slot note: %q", g.Notes)
	}
	if hasText(g.Notes, "degraded") {
		t.Errorf("a link trained as far as its ends allow is not degraded: %q", g.Notes)
	}
}

func TestForBoxCM4AfterPcieBusPerf(t *testing.T) {
	b := cm4()
	for i := range b.PCIe {
		b.PCIe[i].MPS = 512
	}
	g := ForBox(b).Groups[0]
	if hasText(g.Notes, "pcie_bus_perf") {
		t.Errorf("MPS note with MPS at its maximum: %q", g.Notes)
	}
	before := ForBox(cm4()).Groups[0]
	if g.Full.Receive.FPS <= before.Full.Receive.FPS {
		t.Error("MPS 512 does not raise the ceiling")
	}
	// Still short of four ports.
	if len(g.Warnings) == 0 {
		t.Error("four 1G ports fit a Gen2 x1 link at MPS 512?")
	}
	// MPS is the minimum along the path: one device left at 128 caps it.
	b.PCIe[0].MPS = 128
	if g := ForBox(b).Groups[0]; g.MPS != 128 {
		t.Errorf("MPS %d with the root port at 128", g.MPS)
	}
}

func TestForBoxPortsFit(t *testing.T) {
	b := cm4()
	b.NICs = b.NICs[:4] // eth1 and eth2 only
	g := ForBox(b).Groups[0]
	if len(g.Warnings) != 0 || g.PortsBps != 2e9 || hasText(g.Notes, "64-byte") {
		t.Errorf("two ports on Gen2 x1: ports %d, warnings %q, notes %q", g.PortsBps, g.Warnings, g.Notes)
	}
	// 3.1 Gb/s of ports: full-size frames fit (about 3.35 Gb/s), 64-byte
	// frames (about 3.0 Gb/s of them) do not.
	b = cm4()
	b.NICs[5].Link.SpeedMbps = 100
	g = ForBox(b).Groups[0]
	if len(g.Warnings) != 0 || g.PortsBps != 3.1e9 || !hasText(g.Notes, "in 64-byte frames the bus takes") {
		t.Errorf("3.1 Gb/s of ports: warnings %q notes %q (small-frame ceiling %.4g b/s)", g.Warnings, g.Notes, g.Small.Receive.LineBps)
	}
}

// apu is a PC Engines APU: each i211 on its own Gen2 x1 root port.
func apu() *box.Box {
	b := &box.Box{}
	for i, fn := range []string{"1", "2", "3"} {
		rp := "0000:00:02." + fn
		addr := "0000:0" + string(rune('1'+i)) + ":00.0"
		b.NICs = append(b.NICs, nic("enp"+string(rune('1'+i))+"s0", "igb", 1000, addr, addr, rp))
		b.PCIe = append(b.PCIe,
			box.PCIeDevice{Addr: rp, RootPort: true, CurSpeedGTs: 5, CurWidth: 1, MaxSpeedGTs: 5, MaxWidth: 1, MPSSupported: 512, MPS: 128, MRRS: 512},
			box.PCIeDevice{Addr: addr, Upstream: rp, CurSpeedGTs: 2.5, CurWidth: 1, MaxSpeedGTs: 2.5, MaxWidth: 1, MPSSupported: 512, MPS: 128, MRRS: 512})
	}
	return b
}

func TestForBoxAPU(t *testing.T) {
	r := ForBox(apu())
	if len(r.Groups) != 3 {
		t.Fatalf("%d groups, want one per root port", len(r.Groups))
	}
	for _, g := range r.Groups {
		if len(g.NICs) != 1 || len(g.Warnings) != 0 || g.Link == nil || *g.Link != (Link{1, 1}) {
			t.Errorf("group %s: nics %v link %v warnings %q", g.ID, g.NICs, g.Link, g.Warnings)
		}
		// The i211 is a Gen1 device: the root port could do Gen2.
		if !hasText(g.Notes, "0000:00:02.") || !hasText(g.Notes, "supports Gen2 x1") {
			t.Errorf("group %s notes: %q", g.ID, g.Notes)
		}
	}
}

// switched puts two 10G ports behind a PCIe switch whose uplink trained
// at Gen2 x1 although both ends do Gen3 x4.
func switched() *box.Box {
	b := &box.Box{}
	rp, usp := "0000:00:01.0", "0000:01:00.0"
	b.NICs = append(b.NICs,
		nic("enp3s0", "ixgbe", 10000, "0000:03:00.0", "0000:03:00.0", "0000:02:01.0", usp, rp),
		nic("enp4s0", "ixgbe", 10000, "0000:04:00.0", "0000:04:00.0", "0000:02:02.0", usp, rp))
	dev := func(addr, up string, cur float64, curW int) box.PCIeDevice {
		return box.PCIeDevice{Addr: addr, Upstream: up, CurSpeedGTs: cur, CurWidth: curW, MaxSpeedGTs: 8, MaxWidth: 4, MPSSupported: 256, MPS: 256, MRRS: 512}
	}
	b.PCIe = append(b.PCIe,
		dev(rp, "", 5, 1), dev(usp, rp, 5, 1),
		dev("0000:02:01.0", usp, 8, 4), dev("0000:02:02.0", usp, 8, 4),
		dev("0000:03:00.0", "0000:02:01.0", 8, 4), dev("0000:04:00.0", "0000:02:02.0", 8, 4))
	b.PCIe[0].RootPort = true
	return b
}

func TestForBoxSwitch(t *testing.T) {
	r := ForBox(switched())
	if len(r.Groups) != 1 {
		t.Fatalf("%d groups", len(r.Groups))
	}
	g := r.Groups[0]
	if g.Bottleneck != "0000:00:01.0 > 0000:01:00" || *g.Link != (Link{2, 1}) || *g.MaxLink != (Link{3, 4}) {
		t.Errorf("bottleneck %q link %v max %v", g.Bottleneck, g.Link, g.MaxLink)
	}
	if !hasText(g.Notes, "below the Gen3 x4 (8 GT/s) both ends support") {
		t.Errorf("no degraded-link note: %q", g.Notes)
	}
	if len(g.Warnings) != 2 || g.PortsBps != 20e9 {
		t.Errorf("ports %d warnings %q", g.PortsBps, g.Warnings)
	}
	// Fix the uplink: Gen3 x4 all the way, and the two ports fit at full size.
	b := switched()
	b.PCIe[0].CurSpeedGTs, b.PCIe[0].CurWidth = 8, 4
	b.PCIe[1].CurSpeedGTs, b.PCIe[1].CurWidth = 8, 4
	g = ForBox(b).Groups[0]
	if *g.Link != (Link{3, 4}) || len(g.Warnings) != 0 {
		t.Errorf("healthy switch: link %v warnings %q", g.Link, g.Warnings)
	}
}

func TestForBoxUnknowns(t *testing.T) {
	b := &box.Box{}
	b.NICs = append(b.NICs,
		box.NIC{Name: "veth0", Kind: "veth", MTU: 1500, Link: &ethtool.LinkInfo{SpeedMbps: 10000}},
		box.NIC{Name: "wg0", Kind: "virtual", MTU: 1420, Unsupported: map[string]string{"link": "not supported by this driver"}},
		box.NIC{Name: "dummy0", Kind: "virtual", MTU: 1500, Link: &ethtool.LinkInfo{}},
		box.NIC{Name: "eth5", Kind: "physical", MTU: 9000, PCIAddr: "0000:05:00.0", PCIePath: []string{"0000:05:00.0", "0000:00:05.0"},
			Link: &ethtool.LinkInfo{SpeedMbps: 2500}},
		box.NIC{Name: "eth6", Kind: "physical", MTU: 1500, PCIAddr: "0000:06:00.0", PCIePath: []string{"0000:06:00.0", "0000:00:06.0"},
			Link: &ethtool.LinkInfo{SpeedMbps: 1000}},
		box.NIC{Name: "eth7", Kind: "physical", MTU: 1500, PCIAddr: "0000:07:00.0", Link: &ethtool.LinkInfo{SpeedMbps: 1000}},
	)
	b.PCIe = append(b.PCIe,
		// eth5: link known, config space not readable (no MPS, no MRRS).
		box.PCIeDevice{Addr: "0000:05:00.0", CurSpeedGTs: 5, CurWidth: 1, MaxSpeedGTs: 5, MaxWidth: 1,
			Unsupported: map[string]string{"config": "needs root"}},
		// eth6: nothing known about the link.
		box.PCIeDevice{Addr: "0000:06:00.0", Unsupported: map[string]string{"link": "not in the capture"}},
	)
	r := ForBox(b)
	want := map[string]struct{ notPCIe, unknown string }{
		"veth0":  {"not on PCIe (veth)", ""},
		"wg0":    {"not on PCIe (virtual)", "link settings: not supported by this driver"},
		"dummy0": {"not on PCIe (virtual)", "the driver reports no speed and no supported link modes"},
	}
	for _, n := range r.NICs {
		w, ok := want[n.Name]
		if !ok {
			continue
		}
		if n.NotPCIe != w.notPCIe || n.Unknown != w.unknown {
			t.Errorf("%s: not-PCIe %q unknown %q; want %q %q", n.Name, n.NotPCIe, n.Unknown, w.notPCIe, w.unknown)
		}
		if (n.Unknown == "") != (n.Full != nil) {
			t.Errorf("%s: rates present %v with unknown %q", n.Name, n.Full != nil, n.Unknown)
		}
	}
	groups := map[string]Group{}
	for _, g := range r.Groups {
		groups[g.ID] = g
	}
	g5 := groups["0000:00:05.0"]
	if g5.Full == nil || !hasText(g5.Notes, "assumed 128") || !hasText(g5.Notes, "assumed 512") || g5.Frame.Bytes != 9018 {
		t.Errorf("eth5 group: full %v notes %q frame %d", g5.Full != nil, g5.Notes, g5.Frame.Bytes)
	}
	g6 := groups["0000:00:06.0"]
	if g6.Full != nil || !strings.Contains(g6.Unknown, "not known") || !strings.Contains(g6.Unknown, "not in the capture") {
		t.Errorf("eth6 group: unknown %q", g6.Unknown)
	}
	g7 := groups["0000:07:00.0"]
	if g7.Full != nil || !strings.Contains(g7.Unknown, "no PCIe link above 0000:07:00.0") {
		t.Errorf("eth7 group: unknown %q", g7.Unknown)
	}
	if len(r.Groups) != 3 {
		t.Errorf("%d groups, want 3", len(r.Groups))
	}
}

func TestForBoxGen6(t *testing.T) {
	b := &box.Box{
		NICs: []box.NIC{{Name: "eth0", MTU: 1500, PCIAddr: "0000:01:00.0", PCIePath: []string{"0000:01:00.0", "0000:00:01.0"},
			Link: &ethtool.LinkInfo{SpeedMbps: 400000}}},
		PCIe: []box.PCIeDevice{{Addr: "0000:01:00.0", CurSpeedGTs: 64, CurWidth: 16, MPS: 256, MRRS: 512}},
	}
	g := ForBox(b).Groups[0]
	if g.Full != nil || !strings.Contains(g.Unknown, "Gen6") {
		t.Errorf("Gen6: %q", g.Unknown)
	}
}

func TestForBoxNil(t *testing.T) {
	r := ForBox(nil)
	if len(r.NICs) != 0 || len(r.Groups) != 0 || len(r.Assumptions) == 0 {
		t.Errorf("%+v", r)
	}
}

func TestBestMode(t *testing.T) {
	for _, c := range []struct {
		modes []string
		want  int
	}{
		{igbModes, 1000},
		{[]string{"100baseT/Full", "2500baseT/Full", "1000baseT/Full"}, 2500},
		{[]string{"10000baseT/Full", "25000baseCR/Full"}, 25000},
		{[]string{"Autoneg", "base"}, 0},
		{nil, 0},
	} {
		if got := bestMode(c.modes); got != c.want {
			t.Errorf("bestMode(%v) = %d, want %d", c.modes, got, c.want)
		}
	}
}
