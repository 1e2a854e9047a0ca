package main

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// cm4 is the Compute Module 4 of seed 000 on the CM4 IO Board with the
// Intel I340-T4 (82580, four functions) in its PCIe x1 slot, during the
// five-interface iperf test: a receiver on each of eth0..eth4, 3.06 Gb/s in
// total. The 82580 is a x4 card in a x1 slot at 5 GT/s, and MPS is 128 bytes
// on both ends although both support 512 (seed 001: 3.02 Gb/s at 128, 3.42
// at 512 after pci=pcie_bus_perf). The four ports together carry about as
// much as the Gen2 x1 link moves at MPS 128; the onboard eth0 is not on PCIe
// but shares CPU0, where every NIC interrupt lands.
//
// The BCM2711's MSI controller has no MSI-X ("MSIX is not supported by the
// HW", pcie-brcmstb), so igb falls back to MSI: one vector per port named
// after the port, one queue pair each.
func cm4() *box {
	b := &box{
		name: "cm4-i340", host: "raspberrypi", kernel: "5.10.17-v8+", arch: "arm64",
		kv: 510, prec: 3, nrIRQs: 128, ncpu: 4,
		t0:     time.Date(2021, 3, 12, 21, 14, 5, 551230198, time.UTC),
		uptime: 2*3600 + 41*60 + 17.82,
		dts:    []float64{1.000243, 1.000419},
		rng:    rand.New(rand.NewPCG(3, 40)),
		tree:   newTree(),
	}
	up := b.uptime
	server := [8]float64{0.03, 0, 0.31, 0.65, 0, 0, 0.01, 0}
	b.cpus = []*cpuTimes{
		newCPU(up, 0.010, 0.020, 0.002, 0.120, [8]float64{0.01, 0, 0.05, 0, 0, 0, 0.94, 0}),
		newCPU(up, 0.012, 0.045, 0.002, 0.002, server),
		newCPU(up, 0.011, 0.044, 0.002, 0.002, server),
		newCPU(up, 0.010, 0.043, 0.002, 0.002, server),
	}

	// Goodput 740 Mb/s on each 82580 port and 100 Mb/s on eth0 (3.06 Gb/s in
	// all, seed 000): 1448-byte segments in 1514-byte frames, one 66-byte
	// ACK sent for every two segments.
	const portPps = 740e6 / (1448 * 8)
	const eth0Pps = 100e6 / (1448 * 8)
	z := fill(4, 0)
	b.piBaseIRQs([]float64{250, 250, 250, 250})
	b.irq(38, "GICv2", 189, "Level", "eth0", []float64{1921104, 0, 0, 0}, []float64{6050, 0, 0, 0}).aff(gicDefault[0], gicDefault[1], gicDefault[2])
	b.irq(39, "GICv2", 190, "Level", "eth0", []float64{310227, 0, 0, 0}, []float64{880, 0, 0, 0}).aff(gicDefault[0], gicDefault[1], gicDefault[2])
	b.irq(45, "GICv2", 175, "Level", "PCIe PME, aerdrv", z, z)
	irqBase := []float64{3120544, 3098112, 3131870, 3087409}
	for p := 0; p < 4; p++ {
		b.irq(46+p, "BRCM STB PCIe MSI", (0x100|p)<<11, "Edge", fmt.Sprintf("eth%d", p+1),
			[]float64{irqBase[p], 0, 0, 0}, []float64{5600, 0, 0, 0}).aff(msiUnmovable[0], msiUnmovable[1], msiUnmovable[2])
	}
	b.piIPIs([7][]float64{
		{up * 30, up * 60, up * 58, up * 61},
		{up * 0.2, up * 1.1, up * 1.0, up * 1.2},
		nil, nil, nil,
		{up * 15, up * 2, up * 2, up * 2},
		nil,
	}, [7][]float64{{120, 340, 330, 345}, {0.5, 3, 3, 3}, nil, nil, nil, {30, 4, 4, 4}, nil})

	b.softirqs(map[string][]float64{
		"HI":       {3, 0, 1, 0},
		"TIMER":    {up * 90, up * 60, up * 58, up * 59},
		"NET_TX":   {up * 4, up * 9, up * 9, up * 8},
		"NET_RX":   {up * 2900, up * 1.5, up * 1.4, up * 1.5},
		"BLOCK":    {up * 1.2, up * 0.4, up * 0.3, up * 0.3},
		"IRQ_POLL": {0, 0, 0, 0},
		"TASKLET":  {up * 0.3, 2, 1, 1},
		"SCHED":    {up * 50, up * 70, up * 69, up * 71},
		"HRTIMER":  {21, 9, 8, 7},
		"RCU":      {up * 70, up * 55, up * 54, up * 56},
	}, map[string][]float64{
		"TIMER":  {250, 240, 238, 241},
		"NET_TX": {40, 110, 108, 112},
		"NET_RX": {27400, 6, 5, 6},
		"SCHED":  {120, 410, 400, 415},
		"RCU":    {260, 220, 215, 222},
	})

	lo := &nic{name: "lo", queues: []*queue{{rxPkts: 1204, rxBytes: 98112, txPkts: 1204, txBytes: 98112}}, rxCPU: map[int]float64{0: 1}}
	eth0 := &nic{name: "eth0", driver: "bcmgenet", rxCPU: map[int]float64{0: 1}, extra: map[string]*ctr{}}
	for i := 0; i < 5; i++ {
		q := &queue{txPkts: 210440, txBytes: 210440 * 80, txPps: eth0Pps / 2 * 0.2, txSize: 66}
		if i == 4 {
			q.rxPkts, q.rxBytes, q.rxPps, q.rxSize = 4120338, 4120338*1490, eth0Pps, 1514
		}
		eth0.queues = append(eth0.queues, q)
	}
	eth0.multicast = ctr{3310, 0.2}
	eth0.broadcast = ctr{402, 0.05}
	eth0.txBroadcast = ctr{4, 0}
	b.nics = []*nic{lo, eth0}
	rxBase := []float64{40201133, 39877412, 40522087, 39660318}
	for p := 0; p < 4; p++ {
		n := &nic{name: fmt.Sprintf("eth%d", p+1), driver: "igb", rxCPU: map[int]float64{0: 1}, extra: map[string]*ctr{},
			queues: []*queue{{rxPkts: rxBase[p], rxBytes: rxBase[p] * 1511, txPkts: rxBase[p] / 2, txBytes: rxBase[p] / 2 * 67,
				rxPps: portPps, rxSize: 1514, txPps: portPps / 2, txSize: 66}}}
		n.multicast = ctr{21 + float64(p), 0}
		n.broadcast = ctr{6, 0}
		n.txBroadcast = ctr{3, 0}
		n.extra["tx_multicast"] = &ctr{v: 9}
		b.nics = append(b.nics, n)
	}
	b.nics = append(b.nics, &nic{name: "wlan0", queues: []*queue{{}}, rxCPU: map[int]float64{}})
	b.softnet = []*softnetCPU{
		{processed: ctr{175332008, 0.5}, squeeze: ctr{1877201, 640}},
		{processed: ctr{20114, 0.2}},
		{processed: ctr{19870, 0.2}},
		{processed: ctr{21003, 0.2}},
	}

	total := 4*portPps + eth0Pps
	b.snmp = snmpSections(b.kv, false)
	ip := b.snmpSec("Ip")
	ip.set("InReceives", 168412907, total)
	ip.set("InDelivers", 168412907, total)
	ip.set("OutRequests", 84410223, total/2)
	tcp := b.snmpSec("Tcp")
	tcp.set("ActiveOpens", 41, 0)
	tcp.set("PassiveOpens", 122, 0)
	tcp.set("AttemptFails", 1, 0)
	tcp.set("EstabResets", 14, 0)
	tcp.set("CurrEstab", 7, 0)
	tcp.set("InSegs", 168401330, total)
	tcp.set("OutSegs", 84398712, total/2)
	tcp.set("RetransSegs", 88, 0)
	tcp.set("OutRsts", 19, 0)
	udp := b.snmpSec("Udp")
	udp.set("InDatagrams", 11577, 0)
	udp.set("NoPorts", 12, 0)
	udp.set("OutDatagrams", 11603, 0)
	udp.set("IgnoredMulti", 3300, 0.2)
	b.ctxt = ctr{102338412, 41000}
	b.procs = ctr{5120, 0}

	b.sysctls = sysctls5x(false, 117180, 9)
	b.comms = map[int]string{1: "systemd", 388: "sshd", 1201: "iperf", 1207: "iperf", 1213: "iperf", 1219: "iperf", 1225: "iperf", 1302: "bash"}

	t := b.tree
	t.netdev("", "lo", netAttrs{1, 772, "00:00:00:00:00:00", 65536, 1000, "unknown", "1", "", ""}, 1, 1, "0", "", true)
	// addresses and ifindexes as seed 000's `ip link show` printed them
	b.piGenet("b8:27:eb:5c:89:43", 2)
	macs := []string{"90:e2:ba:33:72:64", "90:e2:ba:33:72:65", "90:e2:ba:33:72:66", "90:e2:ba:33:72:67"}
	// BAR addresses from the seed's dmesg, as PCI bus addresses: the
	// BCM2711 maps CPU 0x6_0000_0000 to bus 0xf800_0000.
	bar0 := []uint32{0xf8000000, 0xf8100000, 0xf8180000, 0xf8200000}
	bar3 := []uint32{0xf8280000, 0xf8284000, 0xf8288000, 0xf828c000}
	for p := 0; p < 4; p++ {
		addr := fmt.Sprintf("0000:01:00.%d", p)
		name := fmt.Sprintf("eth%d", p+1)
		dev := piRootDir + "/" + addr
		t.netdev(dev, name, netAttrs{3 + p, 1, macs[p], 1500, 1000, "up", "1", "1000", "full"}, 1, 1, "0", "", false)
		t.pciDev(dev, addr, pciAttrs{vendor: "0x8086", device: "0x150e", class: "0x020000",
			subVendor: "0x8086", subDevice: "0x12a1",
			curSpeed: "5.0 GT/s PCIe", curWidth: "1", maxSpeed: "5.0 GT/s PCIe", maxWidth: "4",
			irq: 46 + p, msi: []int{46 + p}, msiKind: "msi", driver: "igb"})
		cfg := pciConfig{
			vendor: 0x8086, device: 0x150e, rev: 0x01, class: 0x020000, multiFunction: true,
			subVendor: 0x8086, subDevice: 0x12a1,
			bars:    []uint32{bar0[p], 0, 0, bar3[p]},
			irqLine: 0, irqPin: uint8(1 + p),
			pmOff: 0x40, msiOff: 0x50, msiEnabled: true, msi64: true, msiAddr: 0xfffffffc, msiData: 0x6540 + uint16(p),
			msixOff: 0x70, msixTable: 10, expOff: 0xa0,
			portType: 0, mpsSupported: 512, mps: 128, mrrs: 512, flr: true,
			maxSpeed: 2, maxWidth: 4, curSpeed: 2, curWidth: 1,
		}
		t.bin("pci/"+addr+"/config", cfg.bytes())

		b.ethtoolFile(name, "i.txt", drvinfo{"igb", b.kernel, "3.25, 0x800005cf", addr, true, true, true, true, true}.text())
		on, ch := i82580Features(b.kv)
		b.ethtoolFile(name, "k.txt", featuresText(name, b.kv, on, ch))
		// queue pairs (forced by the MSI fallback): tx-usecs is not reported
		b.ethtoolFile(name, "c.txt", coalesceText(name, false, false, map[string]uint32{"rx-usecs": 3}))
		b.ethtoolFile(name, "g.txt", ringText(name, 4096, 4096, 256, 256))
		b.ethtoolFile(name, "l.txt", channelText(name, [4]uint32{0, 0, 0, 8}, [4]uint32{0, 0, 0, 1}))
		b.ethtoolFile(name, "x.txt", rssText(name, 1, make([]int, 128)))
		b.ethtoolFile(name, "n-tcp4.txt", flowHashText("tcp4", "sdfn"))
		b.ethtoolFile(name, "n-udp4.txt", flowHashText("udp4", "sd"))
		b.ethtoolFile(name, "n-tcp6.txt", flowHashText("tcp6", "sdfn"))
		b.ethtoolFile(name, "n-udp6.txt", flowHashText("udp6", "sd"))
		b.ethtoolFile(name, "link.txt", linkText{ports: []string{"TP"}, supported: gigModes, advertised: gigModes,
			pause: "Symmetric", speed: "1000Mb/s", duplex: "Full", port: "Twisted Pair", phyad: 1,
			transceiver: "internal", mdix: "off (auto)", wolSupported: "pumbg", wol: "d",
			msglvl: 7, msgNames: "drv probe link", link: true}.text(name))
	}
	b.piRootPort(2, 45)
	b.piWlan("b8:27:eb:74:f2:6c", 7)

	b.cpufreq(true, true, "cpufreq-dt", "ondemand", 600000, 1500000, []int{1500000, 1500000, 1500000, 1500000}, piFreqs)
	b.thermal("cpu-thermal", 63783)
	b.piThrottle(0)
	return b
}

// i82580Features is igb_probe's feature set for an 82580 (mac type below
// i350: no ntuple filters).
func i82580Features(kv int) (on, changeable []string) {
	on, changeable = i211Features(kv)
	var ch []string
	for _, f := range changeable {
		if f != "rx-ntuple-filter" {
			ch = append(ch, f)
		}
	}
	return on, ch
}
