package main

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// apu4 is venus, the receiving PC Engines apu4d4 of seed 004, during its
// "2x Sender, 1x Receiver" run: two udpsender threads on mars send 32-byte
// UDP datagrams to one address of venus's enp4s0; udp4 is hashed on the IP
// addresses only, so every packet lands in rx queue 0, whose interrupt
// (57, enp4s0-rx-0) irqbalance keeps on CPU3. The receiver shows 155-165
// kpps, CPU3 at 68.3 % softirq, 24.6 % system, 6.7 % idle, and IRQ 57
// rising by about 16 K a second.
func apu4() *box {
	b := &box{
		name: "apu4", host: "venus", kernel: "5.4.0-91-generic", arch: "amd64",
		kv: 504, x86: true, prec: 4, nrIRQs: 1024, ncpu: 4,
		t0:     time.Date(2020, 11, 21, 10, 45, 12, 402118329, time.UTC),
		uptime: 3*86400 + 7342.57,
		dts:    []float64{1.000212, 1.000187},
		rng:    rand.New(rand.NewPCG(4, 4)),
		tree:   newTree(),
	}
	up := b.uptime
	idle := [8]float64{0.004, 0, 0.012, 0.984, 0, 0, 0, 0}
	b.cpus = []*cpuTimes{
		newCPU(up, 0.004, 0.010, 0.0005, 0.001, idle),
		newCPU(up, 0.003, 0.008, 0.0003, 0.001, [8]float64{0.002, 0, 0.008, 0.99, 0, 0, 0, 0}),
		newCPU(up, 0.005, 0.011, 0.0004, 0.002, [8]float64{0.008, 0, 0.012, 0.98, 0, 0, 0, 0}),
		// 3.8e9 packets at ~160 kpps is ~6.6 h of softirq work in three days
		newCPU(up, 0.004, 0.030, 0.0002, 0.065, [8]float64{0.004, 0, 0.246, 0.067, 0, 0, 0.683, 0}),
	}

	// /proc/interrupts: x86 5.4 layout, 4-digit IRQ numbers as in the seed.
	z := fill(4, 0)
	b.irq(0, "IO-APIC", 2, "edge", "timer", []float64{33, 0, 0, 0}, z)
	b.irq(4, "IO-APIC", 4, "edge", "ttyS0", []float64{0, 0, 1274, 0}, z)
	b.irq(8, "IO-APIC", 8, "edge", "rtc0", []float64{0, 1, 0, 0}, z)
	b.irq(9, "IO-APIC", 9, "fasteoi", "acpi", []float64{0, 0, 0, 0}, z)
	b.irq(18, "IO-APIC", 18, "fasteoi", "ehci_hcd:usb1", []float64{0, 0, 29, 0}, z)
	for p := 1; p <= 4; p++ {
		// root ports 00:02.p signal PME through MSI: hwirq = devfn << 11
		b.irq(24+p, "PCI-MSI", (0x10+p)<<11, "edge", "PCIe PME", z, z)
	}
	b.irq(29, "PCI-MSI", 0x88<<11, "edge", "ahci[0000:00:11.0]", []float64{0, 0, 0, 41876}, []float64{0, 0, 0, 0.3})
	b.irq(30, "PCI-MSI", 0x80<<11, "edge", "xhci_hcd", []float64{0, 0, 0, 0}, z)
	// i211 MSI-X vectors, 5 per port: the link/other vector, rx-0, rx-1,
	// tx-0, tx-1. hwirq = (bus << 8 | devfn) << 11 | entry.
	ports := []struct {
		counts [5][]float64
		rates  [5][]float64
		aff    [5][3]string
	}{
		{ // enp1s0: the management LAN, a trickle of ssh and broadcasts
			counts: [5][]float64{{0, 3, 0, 0}, {0, 0, 290112, 0}, {311470, 0, 0, 0}, {0, 0, 0, 208113}, {0, 201544, 0, 0}},
			rates:  [5][]float64{z, {0, 0, 7, 0}, {5, 0, 0, 0}, {0, 0, 0, 4}, {0, 3, 0, 0}},
			aff:    [5][3]string{{"2", "1", "1"}, {"4", "2", "2"}, {"1", "0", "0"}, {"8", "3", "3"}, {"2", "1", "1"}},
		},
		{ // enp2s0: no cable
			counts: [5][]float64{{0, 0, 1, 0}, z, z, z, z},
			rates:  [5][]float64{z, z, z, z, z},
			aff:    [5][3]string{{"4", "2", "2"}, {"f", "0-3", "0"}, {"f", "0-3", "1"}, {"f", "0-3", "2"}, {"f", "0-3", "3"}},
		},
		{ // enp3s0: no cable
			counts: [5][]float64{{1, 0, 0, 0}, z, z, z, z},
			rates:  [5][]float64{z, z, z, z, z},
			aff:    [5][3]string{{"1", "0", "0"}, {"f", "0-3", "1"}, {"f", "0-3", "2"}, {"f", "0-3", "3"}, {"f", "0-3", "0"}},
		},
		{ // enp4s0: the seed's lines 56-60 at sample 000
			counts: [5][]float64{{0, 1, 0, 0}, {0, 0, 417, 266296679}, {980, 205, 8093, 7}, {2525, 410, 6187, 204}, {1877, 348, 7462, 85}},
			rates:  [5][]float64{z, {0, 0, 0, 16010}, z, {0, 0, 0.4, 0}, {0, 0, 0.3, 0}},
			aff:    [5][3]string{{"2", "1", "1"}, {"8", "3", "3"}, {"4", "2", "2"}, {"4", "2", "2"}, {"4", "2", "2"}},
		},
	}
	suffix := []string{"", "-rx-0", "-rx-1", "-tx-0", "-tx-1"}
	for p, port := range ports {
		bus := p + 1
		for v := 0; v < 5; v++ {
			n := 41 + 5*p + v
			name := fmt.Sprintf("enp%ds0%s", bus, suffix[v])
			a := port.aff[v]
			b.irq(n, "PCI-MSI", bus<<8<<11|v, "edge", name, port.counts[v], port.rates[v]).aff(a[0], a[1], a[2])
		}
	}
	var errCount, misCount uint64
	named := []struct {
		label, desc string
		counts      []float64
		rates       []float64
	}{
		{"NMI", "Non-maskable interrupts", []float64{27, 25, 26, 31}, z},
		{"LOC", "Local timer interrupts", []float64{10412734, 9876513, 10103388, 14568301}, []float64{42, 35, 61, 250}},
		{"SPU", "Spurious interrupts", z, z},
		{"PMI", "Performance monitoring interrupts", []float64{27, 25, 26, 31}, z},
		{"IWI", "IRQ work interrupts", []float64{2, 1, 3, 1204}, []float64{0, 0, 0, 0.2}},
		{"RTR", "APIC ICR read retries", z, z},
		{"RES", "Rescheduling interrupts", []float64{210334, 190876, 205121, 160432}, []float64{3, 2, 4, 31}},
		{"CAL", "Function call interrupts", []float64{22410, 25102, 24088, 23345}, []float64{0.2, 0.2, 0.3, 0.4}},
		{"TLB", "TLB shootdowns", []float64{1530, 1611, 1498, 1702}, z},
		{"TRM", "Thermal event interrupts", z, z},
		{"THR", "Threshold APIC interrupts", z, z},
		{"DFR", "Deferred Error APIC interrupts", z, z},
		{"MCE", "Machine check exceptions", z, z},
		{"MCP", "Machine check polls", []float64{888, 888, 888, 888}, []float64{1.0 / 300, 1.0 / 300, 1.0 / 300, 1.0 / 300}},
	}
	for _, n := range named {
		b.named = append(b.named, &namedLine{label: n.label, desc: n.desc,
			counts: append([]float64(nil), n.counts...), rates: append([]float64(nil), n.rates...)})
	}
	b.named = append(b.named,
		&namedLine{label: "ERR", global: &errCount},
		&namedLine{label: "MIS", global: &misCount},
		&namedLine{label: "PIN", desc: "Posted-interrupt notification event", counts: fill(4, 0), rates: z},
		&namedLine{label: "NPI", desc: "Nested posted-interrupt event", counts: fill(4, 0), rates: z},
		&namedLine{label: "PIW", desc: "Posted-interrupt wakeup event", counts: fill(4, 0), rates: z},
	)

	b.softirqs(map[string][]float64{
		"HI":       {1, 0, 0, 2},
		"TIMER":    {1204451, 1100982, 1315510, 2001334},
		"NET_TX":   {61, 43, 57, 2417},
		"NET_RX":   {301887, 210444, 298113, 270335810},
		"BLOCK":    {20441, 18003, 21557, 19004},
		"IRQ_POLL": {0, 0, 0, 0},
		"TASKLET":  {12, 4, 1288, 9},
		"SCHED":    {984221, 902331, 1022871, 1209445},
		"HRTIMER":  {31, 12, 40, 18},
		"RCU":      {1113408, 1054129, 1145006, 1477390},
	}, map[string][]float64{
		"TIMER":  {30, 25, 48, 250},
		"NET_RX": {4, 0, 7, 16060},
		"SCHED":  {20, 15, 38, 152},
		"RCU":    {24, 19, 35, 181},
	})

	// NICs and their queues
	lo := &nic{name: "lo", queues: []*queue{{rxPkts: 15402, rxBytes: 1398211, txPkts: 15402, txBytes: 1398211, rxPps: 0.5, rxSize: 91, txPps: 0.5, txSize: 91}},
		rxCPU: map[int]float64{0: 1}}
	mk := func(name string) *nic { return &nic{name: name, driver: "igb", extra: map[string]*ctr{}} }
	enp1 := mk("enp1s0")
	enp1.queues = []*queue{
		{rxPkts: 3011882, rxBytes: 402338114, txPkts: 1988201, txBytes: 301124455, rxPps: 7, rxSize: 142, txPps: 4, txSize: 151},
		{rxPkts: 2987733, rxBytes: 398871027, txPkts: 2001934, txBytes: 302288127, rxPps: 5, rxSize: 138, txPps: 3, txSize: 149},
	}
	enp1.rxCPU = map[int]float64{2: 0.55, 0: 0.45}
	enp1.multicast = ctr{41877, 0.2}
	enp1.broadcast = ctr{118240, 0.6}
	enp1.txBroadcast = ctr{12, 0}
	enp1.extra["tx_multicast"] = &ctr{v: 53}
	enp1.extra["tx_tcp_seg_good"] = &ctr{v: 10544}
	enp2, enp3 := mk("enp2s0"), mk("enp3s0")
	for _, n := range []*nic{enp2, enp3} {
		n.queues = []*queue{{}, {}}
		n.rxCPU = map[int]float64{}
	}
	enp4 := mk("enp4s0")
	enp4.queues = []*queue{
		// 32-byte UDP payload: 14 + 20 + 8 + 32 = 74 bytes a frame without FCS
		{rxPkts: 3808489796, rxBytes: 3808489796 * 74, txPkts: 706, txBytes: 706 * 71, rxPps: 161000, rxSize: 74},
		{txPkts: 500, txBytes: 500 * 68},
	}
	enp4.rxCPU = map[int]float64{3: 1}
	enp4.broadcast = ctr{4, 0}
	enp4.txBroadcast = ctr{3, 0}
	b.nics = []*nic{lo, enp1, enp2, enp3, enp4}
	b.softnet = []*softnetCPU{
		{processed: ctr{6012771, 2}},
		{processed: ctr{4102344, 1}},
		{processed: ctr{5987120, 2}},
		{processed: ctr{3808933871, 0.5}, squeeze: ctr{120512, 9}, dropped: ctr{0, 0}},
	}

	b.snmp = snmpSections(b.kv, false)
	ip := b.snmpSec("Ip")
	ip.set("InReceives", 3810226473, 161010)
	ip.set("InDelivers", 3810226101, 161010)
	ip.set("InAddrErrors", 371, 0)
	ip.set("OutRequests", 2104441, 6)
	udp := b.snmpSec("Udp")
	udp.set("InDatagrams", 3806910121, 161000)
	udp.set("NoPorts", 1210, 0)
	// the single-thread runs with a 4 KiB receive buffer overflowed before
	udp.set("InErrors", 1588206, 0)
	udp.set("RcvbufErrors", 1588206, 0)
	udp.set("OutDatagrams", 5124, 0)
	tcp := b.snmpSec("Tcp")
	tcp.set("ActiveOpens", 412, 0)
	tcp.set("PassiveOpens", 96, 0)
	tcp.set("AttemptFails", 3, 0)
	tcp.set("EstabResets", 21, 0)
	tcp.set("CurrEstab", 2, 0)
	tcp.set("InSegs", 2250118, 5)
	tcp.set("OutSegs", 2410772, 6)
	tcp.set("RetransSegs", 310, 0)
	tcp.set("OutRsts", 44, 0)
	icmp := b.snmpSec("Icmp")
	icmp.set("InMsgs", 18, 0)
	icmp.set("InDestUnreachs", 18, 0)
	icmp.set("OutMsgs", 1210, 0)
	icmp.set("OutDestUnreachs", 1210, 0)
	im := b.snmpSec("IcmpMsg")
	im.set("InType3", 18, 0)
	im.set("OutType3", 1210, 0)
	b.ctxt = ctr{412887126, 5200}
	b.procs = ctr{14302, 0.1}

	b.sysctls = sysctls5x(false, 117572, 3)
	b.comms = map[int]string{1: "systemd", 612: "irqbalance", 803: "sshd", 1544: "udpreceiver", 1561: "bash"}

	// sysfs
	t := b.tree
	t.netdev("", "lo", netAttrs{1, 772, "00:00:00:00:00:00", 65536, 1000, "unknown", "1", "", ""}, 1, 1, "0", "", true)
	for p := 1; p <= 4; p++ {
		root := fmt.Sprintf("0000:00:02.%d", p)
		addr := fmt.Sprintf("0000:%02x:00.0", p)
		rootDir := "sys/devices/pci0000:00/" + root
		dev := rootDir + "/" + addr
		name := fmt.Sprintf("enp%ds0", p)
		up := p == 1 || p == 4
		a := netAttrs{ifindex: p + 1, typ: 1, address: fmt.Sprintf("00:0d:b9:5a:3c:%02x", 0x0f+p), mtu: 1500, txQueueLen: 1000}
		if up {
			a.operstate, a.carrier, a.speed, a.duplex = "up", "1", "1000", "full"
		} else {
			a.operstate, a.carrier, a.speed, a.duplex = "down", "0", "-1", "unknown"
		}
		t.netdev(dev, name, a, 2, 2, "0", "0", false)
		t.pciDev(rootDir, root, pciAttrs{vendor: "0x1022", device: "0x1439", class: "0x060400",
			subVendor: "0x0000", subDevice: "0x0000",
			curSpeed: "2.5 GT/s", curWidth: "1", maxSpeed: "5 GT/s", maxWidth: "1",
			irq: 24 + p, msi: []int{24 + p}, msiKind: "msi", driver: "pcieport"})
		var msi []int
		for v := 0; v < 5; v++ {
			msi = append(msi, 41+5*(p-1)+v)
		}
		t.pciDev(dev, addr, pciAttrs{vendor: "0x8086", device: "0x1539", class: "0x020000",
			subVendor: "0x8086", subDevice: "0x0000",
			curSpeed: "2.5 GT/s", curWidth: "1", maxSpeed: "2.5 GT/s", maxWidth: "1",
			irq: 31 + p, msi: msi, msiKind: "msix", driver: "igb"})
		t.bin("pci/"+root+"/config", pciConfig{
			vendor: 0x1022, device: 0x1439, class: 0x060400, bridge: true,
			priBus: 0, secBus: uint8(p), subBus: uint8(p),
			pmOff: 0x50, expOff: 0x58, msiOff: 0xa0, msiEnabled: true, msiAddr: 0xfee00000, msiData: 0x4021 + uint16(p),
			portType: 4, mpsSupported: 128, mps: 128, mrrs: 512,
			maxSpeed: 2, maxWidth: 1, curSpeed: 1, curWidth: 1, dllActiveCapable: true,
		}.bytes())
		t.bin("pci/"+addr+"/config", pciConfig{
			vendor: 0x8086, device: 0x1539, rev: 0x03, class: 0x020000,
			subVendor: 0x8086, subDevice: 0x0000,
			bars:    []uint32{0xfe400000 + uint32(p)<<20, 0, 0, 0xfe420000 + uint32(p)<<20},
			irqLine: uint8(31 + p), irqPin: 1,
			pmOff: 0x40, msiOff: 0x50, msi64: true, msixOff: 0x70, msixEnabled: true, msixTable: 5, expOff: 0xa0,
			portType: 0, mpsSupported: 512, mps: 128, mrrs: 512, flr: true,
			maxSpeed: 1, maxWidth: 1, curSpeed: 1, curWidth: 1,
		}.bytes())

		// ethtool
		b.ethtoolFile(name, "i.txt", drvinfo{"igb", "5.6.0-k", "0. 6-1", addr, true, true, true, true, true}.text())
		on, ch := i211Features(b.kv)
		b.ethtoolFile(name, "k.txt", featuresText(name, b.kv, on, ch))
		b.ethtoolFile(name, "c.txt", coalesceText(name, false, false, map[string]uint32{"rx-usecs": 3, "tx-usecs": 3}))
		b.ethtoolFile(name, "g.txt", ringText(name, 4096, 4096, 256, 256))
		b.ethtoolFile(name, "l.txt", channelText(name, [4]uint32{0, 0, 1, 2}, [4]uint32{0, 0, 1, 2}))
		table := make([]int, 128)
		for j := range table {
			table[j] = j * 2 / 128 // igb_setup_mrqc: (j * num_rx_queues) / IGB_RETA_SIZE
		}
		b.ethtoolFile(name, "x.txt", rssText(name, 2, table))
		b.ethtoolFile(name, "n-tcp4.txt", flowHashText("tcp4", "sdfn"))
		b.ethtoolFile(name, "n-udp4.txt", flowHashText("udp4", "sd"))
		b.ethtoolFile(name, "n-tcp6.txt", flowHashText("tcp6", "sdfn"))
		b.ethtoolFile(name, "n-udp6.txt", flowHashText("udp6", "sd"))
		lt := linkText{ports: []string{"TP"}, supported: gigModes, advertised: gigModes, pause: "Symmetric",
			speed: "1000Mb/s", duplex: "Full", port: "Twisted Pair", phyad: 1, transceiver: "internal",
			mdix: "off (auto)", wolSupported: "pumbg", wol: "g", msglvl: 7, msgNames: "drv probe link", link: true}
		if !up {
			lt.speed, lt.duplex, lt.mdix, lt.link = "Unknown!", "Unknown! (255)", "Unknown (auto)", false
		}
		b.ethtoolFile(name, "link.txt", lt.text(name))
	}

	// The renderers must reproduce what the seed printed for enp4s0; the
	// seed's own text is what the capture holds.
	for file, seed := range map[string]string{"c.txt": seedCoalesce, "g.txt": seedRings, "l.txt": seedChannels,
		"n-tcp4.txt": seedTCP4, "n-udp4.txt": seedUDP4} {
		mustContain("ethtool/enp4s0/"+file, string(t.files["ethtool/enp4s0/"+file]), seed)
		b.ethtoolFile("enp4s0", file, seed)
	}
	mustContain("ethtool/enp4s0/x.txt", string(t.files["ethtool/enp4s0/x.txt"]), seedRSS)
	b.ethtoolFile("enp4s0", "x.txt", seedRSS)
	mustContain("proc/interrupts", b.procInterrupts(), seedIRQs)
	// the seed's `ethtool -S enp4s0 | grep rx_queue_[01]_packets`
	for _, line := range strings.SplitAfter(strings.TrimSuffix(seedQueueStats, "\n"), "\n") {
		mustContain("ethtool -S enp4s0", enp4.ethtoolS(), line)
	}

	b.cpufreq(false, false, "acpi-cpufreq", "ondemand", 600000, 1000000, []int{600000, 600000, 600000, 1000000}, "1000000 800000 600000")
	b.thermal("acpitz", 57100)
	return b
}

// i211Features is igb_probe's feature set for an i211 (mac type >= i350):
// what is on, and what the user may change.
func i211Features(kv int) (on, changeable []string) {
	hw := []string{"tx-scatter-gather", "tx-tcp-segmentation", "tx-tcp6-segmentation", "rx-hashing",
		"rx-checksum", "tx-checksum-ip-generic", "tx-checksum-sctp", "tx-udp-segmentation",
		"tx-gso-partial", "tx-gre-segmentation", "tx-gre-csum-segmentation", "tx-ipxip4-segmentation",
		"tx-ipxip6-segmentation", "tx-udp_tnl-segmentation", "tx-udp_tnl-csum-segmentation"}
	softOn, softCh := softFeatures(kv)
	on = union(hw, softOn, []string{"highdma", "rx-vlan-filter", "rx-vlan-hw-parse", "tx-vlan-hw-insert"})
	changeable = union(hw, softCh, []string{"rx-vlan-hw-parse", "tx-vlan-hw-insert", "rx-all",
		"rx-ntuple-filter", "tx-tcp-mangleid-segmentation"})
	return on, changeable
}
